import { describe, expect, it } from "vitest";
import { pendingEntry } from "../../harness/session/builtin-addresses.ts";
import { scriptedCursor } from "../../models/scripted/script-source.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import { brief, briefs, heldHook, kinds, ofType, settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";
import { leftoverOperationValues } from "./helpers.ts";

// requestAbort (reference §4.4) and reconciliation (§4.5): the marker is one commit that drains
// steer/followUp, a later drive reconciles, and "aborted" happens iff the terminal commits under
// cancel_requested (§3.8).

describe("requestAbort without a pass", () => {
  it("writes only the marker (operation_abort); a later drive reconciles to aborted with run_end{aborted}", async () => {
    const result = await withDriveRig(
      async (rig) => {
        let beforeDrive = 0;
        rig.harness.hooks.on("before_drive", () => {
          beforeDrive++;
        });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        const promptTip = lane.getTipId();
        const mark = rig.events.length;
        const abort = unwrap(await lane.requestAbort(operationId));
        const afterMarker = { events: rig.events.slice(mark), info: lane.inspectExecution(), record: lane.getResult(operationId) };
        const again = unwrap(await lane.requestAbort(operationId));
        const eventsAfterAgain = rig.events.length;
        const record = settledRecord(await lane.drive({ operationId }));
        const stale = await lane.requestAbort(operationId);
        return {
          operationId, promptTip, abort, afterMarker, again, eventsAfterAgain, record, stale, beforeDrive,
          tail: kinds(rig.events.slice(eventsAfterAgain)),
          runEnd: ofType(rig.events, "run_end"),
          briefs: briefs(lane),
          cursor: rig.session.getValue(scriptedCursor),
          leftovers: leftoverOperationValues(rig.session, operationId),
          info: lane.inspectExecution(),
          markerEvents: eventsAfterAgain - mark,
        };
      },
      { steps: [{ text: "never" }] },
    );
    const { operationId } = result;
    expect(result.abort).toEqual({ operationId, newlyRequested: true, steer: [], followUp: [] });
    expect(result.afterMarker.events).toEqual([{ type: "operation_abort", lane: "main", operationId, steer: [], followUp: [] }]);
    expect(result.afterMarker.info.current).toMatchObject({ id: operationId, at: "starting", status: "aborting" });
    expect(result.afterMarker.record).toBeUndefined();
    // A second request changes nothing and emits nothing.
    expect(result.again).toEqual({ operationId, newlyRequested: false, steer: [], followUp: [] });
    expect(result.markerEvents).toBe(1);
    expect(result.record).toMatchObject({ operationId, status: "aborted", tipId: result.promptTip, fromTipId: null });
    expect(result.record.error).toBeUndefined();
    expect(result.tail).toEqual(["run_end"]);
    expect(result.runEnd).toMatchObject([{ status: "aborted", runId: operationId }]);
    // Reconciliation starts no hook or provider work: before_drive never ran, no step was taken.
    expect(result.beforeDrive).toBe(0);
    expect(result.cursor).toBeUndefined();
    expect(result.briefs).toEqual(["user: go"]);
    expect(result.leftovers).toEqual([]);
    expect(result.info.current).toBeNull();
    // Settled: a stale id cannot cancel anything, even though its record exists.
    expect(result.stale).toMatchObject({ ok: false, error: { code: "OperationMismatch", lastOperationId: operationId } });
  });
});

describe("requestAbort drains steer and followUp", () => {
  it("returns and deletes steer/followUp payloads; nextRun and write items stay queued through the terminal", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        const s1 = unwrap(await lane.steer("steer one")).entryId;
        const f1 = unwrap(await lane.followUp("follow one")).entryId;
        const n1 = unwrap(await lane.nextRun("next one")).entryId;
        const w1 = unwrap(await lane.appendMessage({ role: "user", content: "write one", timestamp: Date.now() }));
        const s2 = unwrap(await lane.steer("steer two")).entryId;
        const mark = rig.events.length;
        const abort = unwrap(await lane.requestAbort(operationId));
        const markerEvents = rig.events.slice(mark);
        const payloads = (ids: string[]) => ids.map((id) => rig.session.getValue(pendingEntry(id)) !== undefined);
        const drainedPayloads = payloads([s1, f1, s2]);
        const keptPayloads = payloads([n1, w1.entryId]);
        const record = settledRecord(await lane.drive({ operationId }));
        const queuesAfterTerminal = lane.inspectExecution().queues.map((item) => [item.kind, item.entryId]);
        const leftovers = leftoverOperationValues(rig.session, operationId);
        // The kept items are captured by the next acceptance, before its prompt.
        const next = settledRecord(await lane.drive({ operationId: unwrap(await lane.accept({ kind: "prompt", prompt: "again" })).operationId }));
        return { abort, markerEvents, drainedPayloads, keptPayloads, record, queuesAfterTerminal, n1, w1, leftovers, next, briefs: briefs(lane) };
      },
      { steps: [{ text: "answer" }] },
    );
    expect(result.w1.placed).toBe(false);
    expect(result.abort.newlyRequested).toBe(true);
    expect(result.abort.steer.map(brief)).toEqual(["user: steer one", "user: steer two"]);
    expect(result.abort.followUp.map(brief)).toEqual(["user: follow one"]);
    const [abortEvent, queueEvent] = result.markerEvents;
    expect(result.markerEvents.map((event: HarnessEvent) => event.type)).toEqual(["operation_abort", "queue_update"]);
    expect(abortEvent).toMatchObject({ steer: result.abort.steer, followUp: result.abort.followUp });
    expect(queueEvent?.type === "queue_update" && queueEvent.queues.map((item) => [item.kind, item.entryId])).toEqual([
      ["nextRun", result.n1],
      ["write", result.w1.entryId],
    ]);
    expect(result.drainedPayloads).toEqual([false, false, false]);
    expect(result.keptPayloads).toEqual([true, true]);
    expect(result.record.status).toBe("aborted");
    expect(result.queuesAfterTerminal).toEqual([
      ["nextRun", result.n1],
      ["write", result.w1.entryId],
    ]);
    expect(result.leftovers).toEqual([]);
    expect(result.next.status).toBe("completed");
    expect(result.briefs).toEqual(["user: go", "user: next one", "user: write one", "user: again", "assistant(stop): answer"]);
  });
});

describe("aborted iff the terminal commits under cancel_requested", () => {
  it("every aborted record follows a marker; completed and failed never do; no operation state is left", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const held = heldHook();
        const lane = await rig.harness.lane("main");
        const run = async (prompt: string, abortHow?: "before" | "at_finish") => {
          const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt }));
          if (abortHow === "before") unwrap(await lane.requestAbort(operationId));
          const driving = lane.drive({ operationId });
          if (abortHow === "at_finish") {
            // The assistant answered; the abort lands while before_run_end is awaiting.
            await held.entered;
            unwrap(await lane.requestAbort(operationId));
            held.release();
          }
          const record = settledRecord(await driving);
          return { record, leftovers: leftoverOperationValues(rig.session, operationId) };
        };
        const outcomes = [await run("ok"), await run("bad"), await run("early", "before")];
        rig.harness.hooks.on("before_run_end", (_event, { signal }) => held.hold(signal));
        outcomes.push(await run("late", "at_finish"));
        return { outcomes, events: rig.events, briefs: briefs(lane) };
      },
      { steps: [{ text: "fine" }, { error: "broken" }, { text: "answered" }] },
    );
    expect(result.outcomes.map((outcome) => outcome.record.status)).toEqual(["completed", "failed", "aborted", "aborted"]);
    for (const outcome of result.outcomes) expect(outcome.leftovers).toEqual([]);
    const marked = new Set(ofType(result.events, "operation_abort").map((event) => event.operationId));
    for (const { record } of result.outcomes) {
      expect(marked.has(record.operationId)).toBe(record.status === "aborted");
      const abortAt = result.events.findIndex((event) => event.type === "operation_abort" && event.operationId === record.operationId);
      const endAt = result.events.findIndex((event) => event.type === "run_end" && event.runId === record.operationId);
      if (record.status === "aborted") expect(abortAt).toBeLessThan(endAt);
    }
    // The late abort still keeps the answer in the transcript; the record points at it.
    expect(result.briefs.slice(-2)).toEqual(["user: late", "assistant(stop): answered"]);
  });
});
