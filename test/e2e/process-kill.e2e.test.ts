import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { LaneExecutionInfo, LaneSnapshot } from "../../schema/lane.ts";
import { Api, appendSteps, createTenant, pollUntil, readAdminToken, scriptedSession, settled, startRun, transcriptText, words } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// spec/API.md "Local development": local state survives restarts of the process, so a run
// interrupted by killing the process continues when it is started again. The process group is
// SIGKILLed mid-stream (no shutdown hooks), then `npm start` runs again on the same persist
// directory and the same .dev.vars.

describe("a run interrupted by killing the process", () => {
  const persistDir = mkdtempSync(join(tmpdir(), "das-e2e-kill-"));
  const servers: DevServer[] = [];
  printServerOutputOnFailure(() => servers);
  afterAll(async () => {
    for (const server of servers) await server.stop();
    rmSync(persistDir, { recursive: true, force: true });
  });

  it("settles with one record after a restart on the same persist dir; the queued nextRun item survives", async () => {
    const first = await startDevServer({ persistDir });
    servers.push(first);
    const { key, api } = await createTenant(new Api(first.baseUrl, readAdminToken()), "crash");
    const sid = "interrupted";
    await scriptedSession(api, sid);
    // A slow first answer (~6 s of streaming), and the step the retry after the crash takes.
    const slow = words(60, "slow");
    await appendSteps(api, sid, [{ text: slow, chunkMs: 100 }, { text: "recovered" }]);
    const operationId = await startRun(api, sid, "go");

    // The provider request is in flight: its intent is durable and it has streamed output.
    await pollUntil(
      "the run to reach assistant.effect_pending",
      () => api.expect<LaneExecutionInfo>(200, "GET", `/v1/sessions/${sid}/lanes/main`),
      (lane) => lane.current?.at === "assistant.effect_pending",
    );
    await pollUntil(
      "streamed output in the snapshot",
      () => api.expect<{ snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`),
      ({ snapshot }) => streamedText(snapshot).length > 0,
    );
    // Queued while busy, for the next run: the interrupted run must not take it.
    const queued = await api.expect<{ entryId: string }>(201, "POST", `/v1/sessions/${sid}/lanes/main/queue`, {
      body: { kind: "nextRun", message: "for the next run" },
    });
    const before = await api.expect<LaneExecutionInfo>(200, "GET", `/v1/sessions/${sid}/lanes/main`);
    expect(before.current).toMatchObject({ id: operationId, status: "running", at: "assistant.effect_pending" });
    expect(before.queues).toMatchObject([{ entryId: queued.entryId, kind: "nextRun" }]);

    await first.kill();
    const down = await fetch(`${first.baseUrl}/health`).then(
      () => "answering",
      () => "down",
    );
    expect(down).toBe("down");

    const second = await startDevServer({ persistDir });
    servers.push(second);
    const again = new Api(second.baseUrl, key);
    // The tenant, its key and the session survived; the alarm resumes the run, whose unknown
    // provider outcome is settled as an interrupted response and retried (default policy).
    const record = await settled(again, sid, operationId, 60_000);
    expect(record).toMatchObject({ operationId, kind: "run", status: "completed", fromTipId: null });

    const lane = await again.expect<LaneExecutionInfo>(200, "GET", `/v1/sessions/${sid}/lanes/main`);
    expect(lane.current).toBeNull();
    expect(lane.lastOperationId).toBe(operationId);
    expect(lane.tipId).toBe(record.tipId);
    expect(lane.queues).toEqual([{ entryId: queued.entryId, kind: "nextRun", type: "message", message: expect.objectContaining({ role: "user", content: "for the next run" }) }]);

    const { snapshot } = await again.expect<{ snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
    expect(snapshot.lastResult).toEqual(record);
    expect(snapshot.operation).toBeNull();
    expect(snapshot.tipId).toBe(record.tipId);
    expect(snapshot.queues.map((item) => item.entryId)).toEqual([queued.entryId]);
    // No duplicated entries: each id and seq once; the prompt once; the queued item not placed.
    const ids = snapshot.transcript.map((entry) => entry.id);
    expect(new Set(ids).size).toBe(ids.length);
    const seqs = snapshot.transcript.map((entry) => entry.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    const text = transcriptText(snapshot);
    expect(text.filter((line) => line === "user: go")).toHaveLength(1);
    expect(text.some((line) => line.includes("for the next run"))).toBe(false);
    // The committed partial of the interrupted request (its outcome unknown), then the retry's answer.
    expect(text[0]).toBe("user: go");
    expect(text.at(-1)).toBe("assistant: recovered");
    expect(text.filter((line) => line === "assistant: recovered")).toHaveLength(1);
    const interrupted = snapshot.transcript.slice(1, -1);
    expect(interrupted).toHaveLength(1);
    const partial = interrupted[0];
    if (partial?.type !== "message" || partial.message.role !== "assistant") throw new Error(`Expected the interrupted response, got ${JSON.stringify(partial)}`);
    expect(partial.message.stopReason).toBe("error");
    expect(slow.startsWith(text[1]?.replace(/^assistant: /, "") ?? "-")).toBe(true);

    // The record is the one answer for the id, however often it is asked.
    expect(await again.expect(200, "GET", `/v1/sessions/${sid}/lanes/main/operations/${operationId}`)).toEqual({ state: "settled", result: record });
  });
});

/** The text streamed so far by the open operation, as the snapshot shows it. */
function streamedText(snapshot: LaneSnapshot): string {
  const message = snapshot.operation?.streamingMessage;
  return message ? message.content.map((part) => (part.type === "text" ? part.text : "")).join("") : "";
}
