import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import { brief, briefs, heldHook, manualClock, normalized, runRecord, settledRecord, transcript, unwrap, withDriveRig, type DriveRig } from "./drive-helpers.ts";
import { leftoverOperationValues } from "./helpers.ts";

// Conveniences are exactly compositions of the primitives (reference §3.9): on two fresh sessions
// with identical scripts they produce the same events, entries and records modulo ids and times.

const SCRIPT: ScriptStep[] = [
  { error: "flaky", retryable: true },
  { toolCalls: [{ name: "lookup", arguments: { q: "x" } }] },
  { thinking: "so", text: "answer" },
];

/** Everything observable a run left behind, with ids and times normalized. */
function observed(rig: DriveRig, lane: AgentLane, operationId: string, extra: unknown = null) {
  const record = lane.getResult(operationId);
  return {
    normalized: normalized({
      events: rig.events.filter((event: HarnessEvent) => event.type !== "message_update"),
      entries: transcript(lane),
      record,
      stats: rig.session.getStats(),
      queues: lane.inspectExecution().queues,
      extra,
    }),
    status: record?.status,
    leftovers: leftoverOperationValues(rig.session, operationId),
  };
}

async function laneWithRetry(rig: DriveRig): Promise<AgentLane> {
  await rig.harness.updateSettings({ retry: { enabled: true, maxRetries: 2, baseDelayMs: 1 } });
  return rig.harness.lane("main");
}

describe("prompt ≡ accept + drive({waitForRetry: true})", () => {
  it("produces the same events, entries and record", async () => {
    const viaPrompt = await withDriveRig(
      async (rig) => {
        const lane = await laneWithRetry(rig);
        const record = runRecord(await lane.prompt("hello"));
        return observed(rig, lane, record.operationId);
      },
      { steps: SCRIPT },
    );
    const viaPrimitives = await withDriveRig(
      async (rig) => {
        const lane = await laneWithRetry(rig);
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
        settledRecord(await lane.drive({ operationId, waitForRetry: true }));
        return observed(rig, lane, operationId);
      },
      { steps: SCRIPT },
    );
    expect(viaPrompt.status).toBe("completed");
    expect(viaPrompt.leftovers).toEqual([]);
    expect(viaPrimitives.normalized).toEqual(viaPrompt.normalized);
  });
});

describe("abort ≡ requestAbort + drive", () => {
  it("on an accepted run with queued steer/followUp: same result, drained payloads, events and record", async () => {
    const prepare = async (rig: DriveRig) => {
      const lane = await rig.harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
      unwrap(await lane.steer("steer me"));
      unwrap(await lane.followUp("then this"));
      unwrap(await lane.nextRun("later"));
      return { lane, operationId };
    };
    const viaAbort = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await prepare(rig);
        const aborted = unwrap(await lane.abort());
        return { ...observed(rig, lane, operationId, aborted), aborted };
      },
      { steps: SCRIPT },
    );
    const viaPrimitives = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await prepare(rig);
        const requested = unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await lane.drive({ operationId }));
        return observed(rig, lane, operationId, { operationId, steer: requested.steer, followUp: requested.followUp, record });
      },
      { steps: SCRIPT },
    );
    expect(viaAbort.status).toBe("aborted");
    expect(viaAbort.aborted.steer.map(brief)).toEqual(["user: steer me"]);
    expect(viaAbort.aborted.followUp.map(brief)).toEqual(["user: then this"]);
    expect(viaAbort.aborted.record?.status).toBe("aborted");
    expect(viaAbort.leftovers).toEqual([]);
    expect(viaPrimitives.normalized).toEqual(viaAbort.normalized);
  });

  it("abort() while a pass is live waits for that pass to reconcile and returns its record", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const held = heldHook();
        rig.harness.hooks.on("before_request", (_event, { signal }) => held.hold(signal));
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
        const driving = lane.drive({ operationId });
        await held.entered;
        const aborting = lane.abort();
        held.release();
        const aborted = unwrap(await aborting);
        const record = settledRecord(await driving);
        return { operationId, aborted, record, briefs: briefs(lane), cursorTaken: rig.events.some((event) => event.type === "turn_start") };
      },
      { steps: SCRIPT },
    );
    expect(result.aborted).toEqual({ operationId: result.operationId, steer: [], followUp: [], record: result.record });
    expect(result.record.status).toBe("aborted");
    expect(result.briefs).toEqual(["user: hello"]);
    expect(result.cursorTaken).toBe(false);
  });
});

describe("conveniences with nothing to act on", () => {
  it("resume() with nothing current is NothingToResume; abort() idle is NoActiveOperation", async () => {
    const result = await withDriveRig(async (rig) => {
      const lane = await rig.harness.lane("main");
      const before = { resume: await lane.resume(), abort: await lane.abort() };
      runRecord(await lane.prompt("hi"));
      const after = { resume: await lane.resume(), abort: await lane.abort() };
      return { before, after, abortEvents: rig.events.filter((event) => event.type === "operation_abort").length };
    });
    for (const outcome of [result.before, result.after]) {
      expect(outcome.resume).toEqual({ ok: false, error: { code: "NothingToResume", lane: "main" } });
      expect(outcome.abort).toEqual({ ok: false, error: { code: "NoActiveOperation", lane: "main" } });
    }
    expect(result.abortEvents).toBe(0);
  });

  it("resume() drives the current operation (here an accepted one and a retry wait) to its record", async () => {
    const result = await withDriveRig(
      async (rig) => {
        await rig.harness.updateSettings({ retry: { enabled: true, maxRetries: 1, baseDelayMs: 1 } });
        const lane = await rig.harness.lane("main");
        const first = unwrap(await lane.accept({ kind: "prompt", prompt: "one" }));
        const resumedAccepted = runRecord(await lane.resume());
        const second = unwrap(await lane.accept({ kind: "prompt", prompt: "two" }));
        const waiting = unwrap(await lane.drive({ operationId: second.operationId }));
        const resumedWaiting = runRecord(await lane.resume());
        return { first, second, resumedAccepted, waiting, resumedWaiting, briefs: briefs(lane) };
      },
      // A frozen clock keeps the first drive short of notBefore; resume's timer is the real 1 ms.
      { steps: [{ text: "A" }, { error: "flaky", retryable: true }, { text: "B" }], clock: manualClock() },
    );
    expect(result.resumedAccepted).toMatchObject({ operationId: result.first.operationId, status: "completed" });
    expect(result.waiting).toMatchObject({ kind: "waiting", reason: "retry" });
    expect(result.resumedWaiting).toMatchObject({ operationId: result.second.operationId, status: "completed" });
    expect(result.briefs).toEqual(["user: one", "assistant(stop): A", "user: two", "assistant(error): ", "assistant(stop): B"]);
  });

  it("resume() that joins a host pass (waitForRetry: false) still waits the retry out and returns the record", async () => {
    const result = await withDriveRig(
      async (rig) => {
        await rig.harness.updateSettings({ retry: { enabled: true, maxRetries: 1, baseDelayMs: 1 } });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        // The host's pass is live; resume joins it (joiner options are ignored) and sees its wait.
        const host = lane.drive({ operationId, waitForRetry: false });
        const resumed = await lane.resume();
        return { operationId, host: unwrap(await host), resumed, briefs: briefs(lane) };
      },
      { steps: [{ error: "flaky", retryable: true }, { text: "B" }], clock: manualClock() },
    );
    expect(result.host).toMatchObject({ kind: "waiting", reason: "retry" });
    expect(result.resumed).toEqual({ ok: true, value: expect.objectContaining({ operationId: result.operationId, status: "completed" }) });
    expect(result.briefs).toEqual(["user: go", "assistant(error): ", "assistant(stop): B"]);
  });

  it("prompt() on a busy lane is LaneBusy and writes nothing", async () => {
    const result = await withDriveRig(async (rig) => {
      const lane = await rig.harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "one" }));
      const events = rig.events.length;
      const busy = await lane.prompt("two");
      return { operationId, busy, quiet: rig.events.length === events, briefs: briefs(lane) };
    });
    expect(result.busy).toEqual({ ok: false, error: { code: "LaneBusy", lane: "main", operationId: result.operationId, operationKind: "run" } });
    expect(result.quiet).toBe(true);
    expect(result.briefs).toEqual(["user: one"]);
  });
});
