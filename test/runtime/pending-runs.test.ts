import { describe, expect, it } from "vitest";
import type { PendingAdmission, PromptAdmission } from "../../harness/runtime/pending-runs.ts";
import { MAX_PENDING_RUNS } from "../../harness/runtime/pending-runs.ts";
import type { BusyPromptAnswer } from "../../harness/runtime/busy-prompts.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import { readLaneState, type ReadLaneState } from "../../harness/runtime/lane-state-form.ts";
import { laneState } from "../../harness/session/builtin-addresses.ts";
import { resultWrite } from "../../harness/runtime/operation-codec.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";
import { ECHO } from "./helpers.ts";
import { briefs, ofType, settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";
import { checkInvariants } from "./invariants.ts";

// Prompts while busy (spec "Prompt while busy"): pending runs are whole operations that start, in
// order and exactly once, with the settlement of the operation before them (one commit), survive a
// restart, and can be cancelled before they start; interrupt aborts the current operation and puts
// its run first; steer and followUp hand the prompt to the running operation.

function admission(answer: BusyPromptAnswer): PromptAdmission {
  if (!("admission" in answer)) throw new Error("expected an admission");
  return answer.admission;
}

function pending(answer: BusyPromptAnswer): PendingAdmission {
  const admitted = admission(answer);
  if (!("state" in admitted)) throw new Error(`expected a pending run, got ${JSON.stringify(admitted)}`);
  return admitted;
}

/** A run started on an idle lane ("first"), and two pending behind it ("second", "third"). */
async function runningAndTwoPending(lane: AgentLane): Promise<{ first: PromptAdmission; second: PendingAdmission; third: PendingAdmission }> {
  const first = admission(unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "first" }, "enqueue")));
  const second = pending(unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "second" }, "enqueue")));
  const third = pending(unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "third" }, "enqueue")));
  return { first, second, third };
}

describe("pending runs (ifBusy: enqueue)", () => {
  it("start one by one with the settlement before them, in acceptance order, across a restart; the lane state holds the line", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const first = unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "first" }, "enqueue"));
        const second = pending(unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "second" }, "enqueue")));
        const third = pending(unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "third" }, "enqueue")));
        const line = lane.pendingRuns();
        const stored = readLaneState(rig.session.getValue(laneState<ReadLaneState>("main"))?.value ?? {}).pending;
        const firstId = admission(first).operationId;
        // The first run's settlement starts the second in the same commit.
        const firstRecord = settledRecord(await lane.drive({ operationId: firstId }));
        const currentAfterFirst = lane.state.operation?.meta.operationId;
        await rig.harness.close();

        // A restart between: the second is the open operation, the third still waits.
        const reopened = await rig.reopen();
        const again = await reopened.harness.lane("main");
        const restored = { current: again.state.operation?.meta.operationId, pending: again.pendingRuns().map((run) => run.operationId) };
        const secondRecord = settledRecord(await again.drive({ operationId: second.operationId }));
        const thirdRecord = settledRecord(await again.drive({ operationId: third.operationId }));
        return {
          first,
          second,
          third,
          line,
          stored,
          firstRecord,
          currentAfterFirst,
          restored,
          secondRecord,
          thirdRecord,
          idle: again.state.operation,
          left: again.pendingRuns(),
          transcript: briefs(again),
          violations: checkInvariants(reopened.session),
        };
      },
      { model: ECHO },
    );
    expect(admission(result.first)).toMatchObject({ startedAt: expect.any(Number) });
    expect([result.second.position, result.third.position]).toEqual([1, 2]);
    expect(result.line.map((run) => run.operationId)).toEqual([result.second.operationId, result.third.operationId]);
    expect(result.stored).toEqual([result.second.operationId, result.third.operationId]);
    expect(result.firstRecord.status).toBe("completed");
    expect(result.currentAfterFirst).toBe(result.second.operationId);
    expect(result.restored).toEqual({ current: result.second.operationId, pending: [result.third.operationId] });
    expect([result.secondRecord.status, result.thirdRecord.status]).toEqual(["completed", "completed"]);
    expect(result.secondRecord.startedAt).toBeGreaterThanOrEqual(result.firstRecord.endedAt);
    expect(result.idle).toBeNull();
    expect(result.left).toEqual([]);
    // Each prompt answered once, in acceptance order.
    expect(result.transcript).toEqual(["user: first", "assistant(stop): first", "user: second", "assistant(stop): second", "user: third", "assistant(stop): third"]);
    expect(result.violations).toEqual([]);
  });

  it("a pending run cancelled before it starts is recorded aborted (cancelled_before_start) and the line closes up", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const { first, second, third } = await runningAndTwoPending(lane);
        const cancelled = unwrap(await lane.requestAbort(second.operationId));
        const again = await lane.requestAbort(second.operationId);
        const line = lane.pendingRuns();
        settledRecord(await lane.drive({ operationId: first.operationId }));
        const thirdRecord = settledRecord(await lane.drive({ operationId: third.operationId }));
        const runEvents = rig.events.flatMap((event) => (event.type === "run_start" || event.type === "run_end" ? [{ type: event.type, runId: event.runId }] : []));
        const cancelEnd = ofType(rig.events, "run_end").find((event) => event.runId === second.operationId);
        return { cancelled, again, line, record: lane.getResult(second.operationId), thirdRecord, first, second, third, runEvents, cancelEnd, transcript: briefs(lane), violations: checkInvariants(rig.session) };
      },
      { model: ECHO },
    );
    expect(result.cancelled).toMatchObject({ newlyRequested: true, steer: [], followUp: [] });
    expect(result.again.ok).toBe(false);
    expect(result.line).toEqual([expect.objectContaining({ operationId: result.third.operationId, position: 1 })]);
    expect(result.record).toMatchObject({ status: "aborted", error: { code: "cancelled_before_start" }, kind: "run" });
    // It never started, yet ends like every run, with its record's run_end (what streams following it wait for).
    const [firstId, secondId, thirdId] = [result.first.operationId, result.second.operationId, result.third.operationId];
    expect(result.runEvents).toEqual([
      { type: "run_start", runId: firstId },
      { type: "run_end", runId: secondId },
      { type: "run_end", runId: firstId },
      { type: "run_start", runId: thirdId },
      { type: "run_end", runId: thirdId },
    ]);
    expect(result.cancelEnd).toMatchObject({ status: "aborted", error: { code: "cancelled_before_start" }, fromTipId: null, tipId: null });
    expect(result.thirdRecord.status).toBe("completed");
    expect(result.transcript).toEqual(["user: first", "assistant(stop): first", "user: third", "assistant(stop): third"]);
    expect(result.violations).toEqual([]);
  });

  it("a pending run that can no longer start at its turn is recorded failed, ends with its run_end, and the next one starts", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const { first, second, third } = await runningAndTwoPending(lane);
        // Its id has a record by the time its turn comes (acceptance refuses a settled id): it cannot start.
        const foreign: OperationResultRecord = { operationId: second.operationId, kind: "run", status: "completed", fromTipId: null, tipId: null, startedAt: 1, endedAt: 1 };
        await rig.session.mutate((m) => m.commit([resultWrite(foreign, "main")]));
        settledRecord(await lane.drive({ operationId: first.operationId }));
        const startedNext = lane.state.operation?.meta.operationId;
        settledRecord(await lane.drive({ operationId: third.operationId }));
        const ends = ofType(rig.events, "run_end").map((event) => ({ runId: event.runId, status: event.status, code: event.error?.code }));
        return { first, second, third, startedNext, ends, transcript: briefs(lane) };
      },
      { model: ECHO },
    );
    expect(result.startedNext).toBe(result.third.operationId);
    expect(result.ends).toEqual([
      { runId: result.first.operationId, status: "completed", code: undefined },
      { runId: result.second.operationId, status: "failed", code: "InvalidOperationId" },
      { runId: result.third.operationId, status: "completed", code: undefined },
    ]);
    expect(result.transcript).toEqual(["user: first", "assistant(stop): first", "user: third", "assistant(stop): third"]);
  });

  it(`refuses the ${MAX_PENDING_RUNS + 1}st pending run with QueueFull and writes nothing; an id already waiting is refused`, async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "running" }, "enqueue"));
        const waiting: string[] = [];
        for (let index = 0; index < MAX_PENDING_RUNS; index++) waiting.push(pending(unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: `p${index}` }, "enqueue"))).operationId);
        const before = rig.session.getStats();
        const full = await lane.acceptWhileBusy({ kind: "prompt", prompt: "one too many" }, "enqueue");
        const repeated = await lane.acceptWhileBusy({ kind: "prompt", prompt: "again", operationId: waiting[0] }, "enqueue");
        return { full, repeated, count: lane.pendingRuns().length, same: JSON.stringify(rig.session.getStats()) === JSON.stringify(before) };
      },
      { model: ECHO },
    );
    expect(result.full).toMatchObject({ ok: false, error: { code: "QueueFull", pendingRuns: MAX_PENDING_RUNS, maxPendingRuns: MAX_PENDING_RUNS } });
    expect(result.repeated).toMatchObject({ ok: false, error: { code: "InvalidOperationId" } });
    expect(result.count).toBe(MAX_PENDING_RUNS);
    expect(result.same).toBe(true);
  });
});

describe("interrupt, steer and followUp while busy", () => {
  it("interrupt aborts the current run (handing back its drained input) and its run goes first, ahead of pending runs", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const running = admission(unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "running" }, "enqueue")));
        const waiting = pending(unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "waiting" }, "enqueue")));
        unwrap(await lane.steer("a steer for the running one"));
        const interrupting = unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "now" }, "interrupt"));
        const line = lane.pendingRuns().map((run) => run.operationId);
        const aborted = settledRecord(await lane.drive({ operationId: running.operationId }));
        const now = pending(interrupting);
        const nowRecord = settledRecord(await lane.drive({ operationId: now.operationId }));
        const waitingRecord = settledRecord(await lane.drive({ operationId: waiting.operationId }));
        return { interrupting, line, aborted, now, nowRecord, waiting, waitingRecord, transcript: briefs(lane), violations: checkInvariants(rig.session) };
      },
      { model: ECHO },
    );
    if (!("admission" in result.interrupting)) throw new Error("no admission");
    expect(result.interrupting.interrupted).toMatchObject({ newlyRequested: true, steer: [expect.objectContaining({ role: "user", content: "a steer for the running one" })] });
    expect(result.line).toEqual([result.now.operationId, result.waiting.operationId]);
    expect(result.aborted.status).toBe("aborted");
    expect(result.nowRecord.status).toBe("completed");
    expect(result.waitingRecord.status).toBe("completed");
    expect(result.transcript.filter((line) => line.startsWith("user:"))).toEqual(["user: running", "user: now", "user: waiting"]);
    expect(result.violations).toEqual([]);
  });

  it("steer and followUp hand the prompt to the running operation and answer its id; on an idle lane they start a run", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const idle = unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "started" }, "followUp"));
        const current = admission(idle).operationId;
        const steered = unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "steer me" }, "steer"));
        const followed = unwrap(await lane.acceptWhileBusy({ kind: "prompt", prompt: "then this" }, "followUp"));
        const queue = lane.inspectExecution().queues.map((item) => item.kind);
        const record = settledRecord(await lane.drive({ operationId: current }));
        return { idle, steered, followed, current, queue, record, transcript: briefs(lane) };
      },
      { model: ECHO },
    );
    expect(result.idle).toMatchObject({ admission: { operationId: result.current, startedAt: expect.any(Number) } });
    expect(result.steered).toMatchObject({ queued: { operationId: result.current, kind: "steer", entryId: expect.any(String) } });
    expect(result.followed).toMatchObject({ queued: { operationId: result.current, kind: "followUp" } });
    expect(result.queue).toEqual(["steer", "followUp"]);
    expect(result.record.status).toBe("completed");
    // The run took both: the steer before its answer, the followUp after.
    expect(result.transcript.filter((line) => line.startsWith("user:"))).toEqual(["user: started", "user: steer me", "user: then this"]);
  });
});
