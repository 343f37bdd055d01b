import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { LaneExecutionInfo, LaneSnapshot } from "../../schema/lane.ts";
import { Api, createTenant, pollUntil, readAdminToken, scriptedSession, settled, startRun, words, type OperationRecord } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// docs/api-lanes.md "Prompts while busy" against `npm start`: every `ifBusy` strategy on a lane
// that is answering, and the whole server killed while two runs wait in line. After the restart
// each pending run starts exactly once, in the order it was accepted, after the run before it.

type Pending = { operationId: string; state: "pending"; position: number };

describe("prompts while the lane is busy, against npm start", () => {
  const persistDir = mkdtempSync(join(tmpdir(), "das-e2e-busy-"));
  const servers: DevServer[] = [];
  printServerOutputOnFailure(() => servers);
  afterAll(async () => {
    for (const server of servers) await server.stop();
    rmSync(persistDir, { recursive: true, force: true });
  });

  const lanePath = (sid: string) => `/v1/sessions/${sid}/lanes/main`;
  const streaming = (api: Api, sid: string) =>
    pollUntil("the lane to stream its answer", () => api.expect<LaneExecutionInfo>(200, "GET", lanePath(sid)), (lane) => lane.current?.at === "assistant.effect_pending");
  const userTexts = (snapshot: LaneSnapshot) =>
    snapshot.transcript.flatMap((entry) => (entry.type === "message" && entry.message.role === "user" && typeof entry.message.content === "string" ? [entry.message.content] : []));

  it("reject, enqueue, steer, followUp and interrupt; pending runs start once, in order, across a kill", async () => {
    const first = await startDevServer({ persistDir });
    servers.push(first);
    const { key, api } = await createTenant(new Api(first.baseUrl, readAdminToken()), "busy");
    const sid = "busy-e2e";
    await scriptedSession(api, sid);
    // Every answer is long and slow enough to act on while it streams; the steps are taken in turn.
    for (let step = 0; step < 12; step++) await api.expect(201, "POST", `/v1/sessions/${sid}/lists/scripted/steps`, { body: { text: words(40, `s${step}w`), chunkMs: 60 } });

    const running = await startRun(api, sid, "A");
    await streaming(api, sid);
    // reject (the default): 409 LaneBusy, nothing queued.
    const refused = await api.request<{ error: { code: string } }>("POST", `${lanePath(sid)}/operations`, { body: { kind: "prompt", prompt: "refused" } });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("LaneBusy");
    // steer and followUp hand the prompt to the running operation.
    const steered = await api.expect<{ operationId: string; queued: string }>(202, "POST", `${lanePath(sid)}/operations`, { body: { kind: "prompt", prompt: "steer A", ifBusy: "steer" } });
    expect(steered).toMatchObject({ operationId: running, queued: "steer" });
    const followed = await api.expect<{ operationId: string; queued: string }>(202, "POST", `${lanePath(sid)}/operations`, { body: { kind: "prompt", prompt: "follow A", ifBusy: "followUp" } });
    expect(followed).toMatchObject({ operationId: running, queued: "followUp" });
    // enqueue: two pending runs, in line.
    const b = await api.expect<Pending>(202, "POST", `${lanePath(sid)}/operations`, { body: { kind: "prompt", prompt: "B", ifBusy: "enqueue" } });
    const c = await api.expect<Pending>(202, "POST", `${lanePath(sid)}/operations`, { body: { kind: "prompt", prompt: "C", ifBusy: "enqueue" } });
    expect([b.state, b.position, c.state, c.position]).toEqual(["pending", 1, "pending", 2]);
    const line = await api.expect<{ items: Pending[] }>(200, "GET", `${lanePath(sid)}/pending`);
    expect(line.items.map((item) => item.operationId)).toEqual([b.operationId, c.operationId]);

    // The whole server dies while A streams and B and C wait.
    await first.kill();
    const second = await startDevServer({ persistDir });
    servers.push(second);
    const again = new Api(second.baseUrl, key);
    const records: OperationRecord[] = [];
    for (const operationId of [running, b.operationId, c.operationId]) records.push(await settled(again, sid, operationId, 90_000));
    expect(records.map((record) => record.status)).toEqual(["completed", "completed", "completed"]);
    // In order: each pending run started after the run before it ended.
    for (let index = 1; index < records.length; index++) expect(records[index]?.startedAt).toBeGreaterThanOrEqual(records[index - 1]?.endedAt ?? Number.POSITIVE_INFINITY);
    const { snapshot } = await again.expect<{ snapshot: LaneSnapshot }>(200, "GET", `${lanePath(sid)}/snapshot`);
    // Exactly once: every prompt (and the steer and follow-up A took) is in the transcript once.
    expect(userTexts(snapshot)).toEqual(["A", "steer A", "follow A", "B", "C"]);
    expect((await again.expect<{ items: Pending[] }>(200, "GET", `${lanePath(sid)}/pending`)).items).toEqual([]);

    // interrupt: aborts the running operation, then runs, answering with what it drained.
    const d = await startRun(again, sid, "D");
    await streaming(again, sid);
    const interrupting = await again.expect<OperationRecord & { interrupted: { operationId: string } }>(200, "POST", `${lanePath(sid)}/prompt`, { body: { prompt: "E", ifBusy: "interrupt", wait: 60 } });
    expect(interrupting).toMatchObject({ status: "completed", interrupted: { operationId: d } });
    expect(await settled(again, sid, d)).toMatchObject({ status: "aborted" });
    const after = await again.expect<{ snapshot: LaneSnapshot }>(200, "GET", `${lanePath(sid)}/snapshot`);
    expect(userTexts(after.snapshot).slice(-2)).toEqual(["D", "E"]);
  }, 240_000);
});
