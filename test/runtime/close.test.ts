import { readOperation } from "../../harness/runtime/operation-codec.ts";
import { describe, expect, it } from "vitest";
import { UNKNOWN_OUTCOME_MESSAGE } from "../../harness/runtime/drive/assistant/recover.ts";
import { pendingAssistantFrames } from "../../harness/session/builtin-addresses.ts";
import { briefs, kinds, messageOf, ofType, settledRecord, sleep, transcript, unwrap, withDriveRig, type DriveRig } from "./drive-helpers.ts";
import { leftoverOperationValues } from "./helpers.ts";

// Close is a controlled crash (reference §4.7): it writes no cancellation and leaves the operation
// open. A harness re-created on the same session lists it, and driving it recovers the unknown
// assistant outcome from the committed frames (§4.6 assistant.effect_pending).

// Fifty words, one every 20 ms: the stream outlives the first frame window (250 ms) by far.
const TEXT = Array.from({ length: 50 }, (_, index) => `w${index}`).join(" ");

/** Starts a slow streaming run, closes the harness mid-stream, and re-creates it. */
async function closeMidStream(rig: DriveRig, retry: { enabled: boolean; maxRetries: number }) {
  await rig.harness.updateSettings({ retry: { ...retry, baseDelayMs: 1 } });
  const lane = await rig.harness.lane("main");
  const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
  const driving = lane.drive({ operationId });
  // Close once a progress frame is durable (the first one lands after one frame window).
  let framesAtClose = 0;
  while (framesAtClose === 0) {
    await sleep(10);
    const live = readOperation(rig.session, operationId)?.state;
    if (live?.at === "assistant.effect_pending") framesAtClose = rig.session.readList(pendingAssistantFrames(operationId, live.responseEntryId)).length;
  }
  await rig.harness.close();
  const observed = await driving.then(
    () => "resolved",
    (error: unknown) => (error instanceof Error ? error.name : String(error)),
  );
  const closedEvents = kinds(rig.events);
  const reopened = await rig.reopen();
  const relane = await reopened.harness.lane("main");
  const state = relane.inspectExecution().current;
  const stored = readOperation(reopened.session, operationId)?.state;
  const reserved = stored?.at === "assistant.effect_pending" ? stored.responseEntryId : undefined;
  const frames = (id: string) => reopened.session.readList(pendingAssistantFrames(operationId, id));
  return { operationId, observed, closedEvents, reopened, relane, state, frames, reserved, framesAtClose, framesBefore: reserved ? frames(reserved).length : 0 };
}

describe("close during a streaming run", () => {
  it("writes no cancellation; the reopened harness lists the run and recovers it by retry", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const closed = await closeMidStream(rig, { enabled: true, maxRetries: 1 });
        const { reopened, relane, operationId } = closed;
        const record = settledRecord(await relane.drive({ operationId, waitForRetry: true }));
        const entries = transcript(relane);
        const synthetic = entries[1];
        return {
          ...closed,
          record,
          briefs: briefs(relane),
          synthetic: messageOf(synthetic),
          syntheticId: synthetic?.id,
          framesAfter: synthetic ? closed.frames(synthetic.id) : [],
          events: reopened.events,
          leftovers: leftoverOperationValues(reopened.session, operationId),
        };
      },
      { steps: [{ text: TEXT, chunkMs: 20 }, { text: "second try" }] },
    );
    expect(result.observed).toBe("HarnessClosed");
    expect(result.closedEvents).not.toContain("operation_abort");
    expect(result.closedEvents).not.toContain("run_end");
    expect(result.reopened.open).toEqual([expect.objectContaining({ lane: "main", operationId: result.operationId, kind: "run" })]);
    expect(result.reopened.open[0]?.aborting).toBeUndefined();
    expect(result.state).toMatchObject({ at: "assistant.effect_pending", status: "open" });
    expect(result.framesBefore).toBeGreaterThan(0);
    // The synthetic response takes the reserved response id.
    expect(result.syntheticId).toBe(result.reserved);
    // The unknown outcome settles as a synthetic error with the committed partial content.
    expect(result.synthetic).toMatchObject({ role: "assistant", stopReason: "error", errorMessage: UNKNOWN_OUTCOME_MESSAGE, provider: "scripted", model: "script" });
    const partial = result.synthetic.role === "assistant" ? result.synthetic.content.map((block) => (block.type === "text" ? block.text : "")).join("") : "";
    expect(partial.length).toBeGreaterThan(0);
    expect(TEXT.startsWith(partial)).toBe(true);
    // Output streamed after the close is never committed (D14.4): the stream runs on for about
    // three more frame windows, yet at most a write already admitted before the seal landed.
    expect(result.framesBefore).toBeLessThanOrEqual(result.framesAtClose + 1);
    expect(partial.length).toBeLessThan(TEXT.length);
    expect(result.synthetic.role === "assistant" && result.synthetic.usage.totalTokens).toBe(0);
    expect(result.framesAfter).toEqual([]);
    expect(result.record.status).toBe("completed");
    expect(result.briefs.at(-1)).toBe("assistant(stop): second try");
    expect(result.briefs).toHaveLength(3);
    // The reopened harness restores the lane (no lane_created); the restored partial's message
    // is ended by the synthetic settlement; no new turn starts for attempt 2.
    expect(kinds(result.events)).toEqual([
      "message_end",
      "entry_added",
      "usage",
      "stats",
      "retry_scheduled",
      "retry_start",
      "message_start",
      "message_end",
      "entry_added",
      "usage",
      "stats",
      "retry_end",
      "turn_end",
      "run_end",
    ]);
    expect(ofType(result.events, "retry_scheduled")).toMatchObject([{ attempt: 2, recovery: true, errorMessage: UNKNOWN_OUTCOME_MESSAGE }]);
    expect(result.leftovers).toEqual([]);
  });

  it("without retries left the recovered unknown outcome fails the run", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const closed = await closeMidStream(rig, { enabled: false, maxRetries: 0 });
        const record = settledRecord(await closed.relane.drive({ operationId: closed.operationId, waitForRetry: true }));
        return { record, briefs: briefs(closed.relane), leftovers: leftoverOperationValues(closed.reopened.session, closed.operationId) };
      },
      { steps: [{ text: TEXT, chunkMs: 20 }, { text: "never" }] },
    );
    expect(result.record).toMatchObject({ status: "failed", error: { code: "assistant_error", message: UNKNOWN_OUTCOME_MESSAGE } });
    expect(result.briefs).toHaveLength(2);
    expect(result.briefs[1]).toMatch(/^assistant\(error\): /);
    expect(result.leftovers).toEqual([]);
  });
});

describe("close with an accepted run", () => {
  it("leaves it open at starting; the re-created harness drives it to completion", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        await rig.harness.close();
        const refused = await lane.accept({ kind: "prompt", prompt: "late" });
        const reopened = await rig.reopen();
        const relane = await reopened.harness.lane("main");
        const at = relane.inspectExecution().current?.at;
        const record = settledRecord(await relane.drive({ operationId }));
        return { refused, open: reopened.open, at, record, briefs: briefs(relane) };
      },
      { steps: [{ text: "hello" }] },
    );
    expect(result.refused).toEqual({ ok: false, error: { code: "Closed" } });
    expect(result.open).toMatchObject([{ lane: "main", kind: "run" }]);
    expect(result.at).toBe("starting");
    expect(result.record.status).toBe("completed");
    expect(result.briefs).toEqual(["user: go", "assistant(stop): hello"]);
  });
});
