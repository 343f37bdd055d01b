import { describe, expect, it } from "vitest";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import { briefs, kinds, manualClock, nextEvent, ofType, settledRecord, sleep, unwrap, withDriveRig, type DriveRig } from "./drive-helpers.ts";
import { leftoverOperationValues } from "./helpers.ts";

// Retry policy and waits (reference §3.10): backoff base·2^(n−1) from the settlement's clock,
// `waiting{retry}` for the host (with a wake recorded at notBefore) or a timer through the gate.
// The harness runs on a manual clock, so every deadline is an exact computed value.

const flaky: ScriptStep = { error: "flaky", retryable: true };

async function retrying(rig: DriveRig, baseDelayMs: number, maxRetries = 2) {
  await rig.harness.updateSettings({ retry: { enabled: true, maxRetries, baseDelayMs } });
  const lane = await rig.harness.lane("main");
  const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
  return { lane, operationId };
}

describe("retry waits for the host (waitForRetry: false)", () => {
  it("returns waiting{retry, notBefore}, records the wake, and a later drive commits ready and proceeds", async () => {
    const clock = manualClock();
    const t0 = clock.now();
    const result = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await retrying(rig, 5);
        const first = unwrap(await lane.drive({ operationId }));
        const waitingInfo = lane.inspectExecution();
        // Before notBefore nothing moves: the same wait is reported again.
        const early = unwrap(await lane.drive({ operationId }));
        const eventsBefore = kinds(rig.events);
        clock.advance(5);
        const record = settledRecord(await lane.drive({ operationId }));
        const leftovers = leftoverOperationValues(rig.session, operationId);
        return { operationId, first, early, waitingInfo, eventsBefore, record, rig, briefs: briefs(lane), leftovers };
      },
      { steps: [flaky, { text: "ok" }], clock },
    );
    const { operationId, rig } = result;
    expect(result.first).toEqual({ kind: "waiting", operationId, reason: "retry", notBefore: t0 + 5 });
    expect(result.early).toEqual(result.first);
    expect(result.waitingInfo.current).toMatchObject({ id: operationId, at: "assistant.retry_wait", status: "open" });
    expect(rig.wakes).toEqual([
      { lane: "main", operationId, at: t0 },
      { lane: "main", operationId, at: t0 + 5 },
      { lane: "main", operationId, at: "settled" },
    ]);
    expect(result.eventsBefore.filter((type) => type.startsWith("retry_"))).toEqual(["retry_scheduled"]);
    expect(ofType(rig.events, "retry_scheduled")).toMatchObject([{ attempt: 2, maxAttempts: 3, delayMs: 5, notBefore: t0 + 5 }]);
    expect(kinds(rig.events).filter((type) => type.startsWith("retry_") || type === "run_end")).toEqual([
      "retry_scheduled",
      "retry_start",
      "retry_end",
      "run_end",
    ]);
    expect(result.record.status).toBe("completed");
    expect(result.briefs).toEqual(["user: go", "assistant(error): ", "assistant(stop): ok"]);
    expect(result.leftovers).toEqual([]);
  });

  it("delays double per failed attempt: base·2^(n−1) after each settlement", async () => {
    const clock = manualClock();
    const t0 = clock.now();
    const result = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await retrying(rig, 5, 3);
        const outcomes = [unwrap(await lane.drive({ operationId }))];
        clock.advance(5);
        outcomes.push(unwrap(await lane.drive({ operationId })));
        clock.advance(10);
        outcomes.push(unwrap(await lane.drive({ operationId })));
        clock.advance(20);
        const record = settledRecord(await lane.drive({ operationId }));
        return { rig, operationId, outcomes, record };
      },
      { steps: [flaky, flaky, flaky, { text: "ok" }], clock },
    );
    const notBefores = [t0 + 5, t0 + 15, t0 + 35];
    expect(result.outcomes.map((outcome) => (outcome.kind === "waiting" && outcome.reason === "retry" ? outcome.notBefore : null))).toEqual(notBefores);
    expect(ofType(result.rig.events, "retry_scheduled").map((event) => [event.attempt, event.delayMs, event.notBefore])).toEqual([
      [2, 5, t0 + 5],
      [3, 10, t0 + 15],
      [4, 20, t0 + 35],
    ]);
    expect(result.rig.wakes.flatMap((wake) => (typeof wake.at === "number" ? [wake.at] : []))).toEqual([t0, ...notBefores]);
    expect(ofType(result.rig.events, "retry_end")).toMatchObject([{ attempt: 4, success: true }]);
    expect(result.record.status).toBe("completed");
  });

  it("a wait driven at or after notBefore commits ready at once, whichever policy (no timer)", async () => {
    const clock = manualClock();
    const result = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await retrying(rig, 600_000);
        const first = unwrap(await lane.drive({ operationId }));
        clock.advance(600_000);
        // A ten-minute timer would time the test out: none is created.
        const record = settledRecord(await lane.drive({ operationId, waitForRetry: true }));
        return { first, record };
      },
      { steps: [flaky, { text: "ok" }], clock },
    );
    expect(result.first).toMatchObject({ kind: "waiting", reason: "retry" });
    expect(result.record.status).toBe("completed");
  });
});

describe("retry waits in process (waitForRetry: true)", () => {
  it("waits through the gated timer and settles in one drive", async () => {
    const clock = manualClock();
    const t0 = clock.now();
    const result = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await retrying(rig, 5);
        const record = settledRecord(await lane.drive({ operationId, waitForRetry: true }));
        return { rig, record, briefs: briefs(lane), leftovers: leftoverOperationValues(rig.session, operationId) };
      },
      { steps: [flaky, flaky, { text: "ok" }], clock },
    );
    expect(result.record.status).toBe("completed");
    expect(result.briefs).toEqual(["user: go", "assistant(error): ", "assistant(error): ", "assistant(stop): ok"]);
    // The frozen clock makes both settlements happen "at" t0: the deadlines are the delays.
    expect(ofType(result.rig.events, "retry_scheduled").map((event) => [event.delayMs, event.notBefore])).toEqual([
      [5, t0 + 5],
      [10, t0 + 10],
    ]);
    expect(ofType(result.rig.events, "retry_start").map((event) => event.attempt)).toEqual([2, 3]);
    expect(result.leftovers).toEqual([]);
  });

  it("an abort during the gated timer cancels it; reconciliation ends the run aborted", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await retrying(rig, 600_000);
        const scheduled = nextEvent(rig.harness, (event) => event.type === "retry_scheduled");
        const driving = lane.drive({ operationId, waitForRetry: true });
        await scheduled;
        await sleep(20); // the pass has admitted its timer by now (admission first)
        const abort = unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await driving);
        return { rig, abort, record, briefs: briefs(lane), leftovers: leftoverOperationValues(rig.session, operationId) };
      },
      { steps: [flaky, { text: "never" }] },
    );
    expect(result.abort).toMatchObject({ newlyRequested: true });
    expect(result.record.status).toBe("aborted");
    expect(result.briefs).toEqual(["user: go", "assistant(error): "]);
    expect(kinds(result.rig.events).slice(-4)).toEqual(["stats", "retry_scheduled", "operation_abort", "run_end"]);
    expect(ofType(result.rig.events, "run_end")).toMatchObject([{ status: "aborted" }]);
    expect(result.leftovers).toEqual([]);
  });

  it("an abort begun before the timer is admitted (abort first) refuses the timer and ends aborted", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await retrying(rig, 600_000);
        let aborting: ReturnType<typeof lane.requestAbort> | undefined;
        // Called during the retry_scheduled delivery, which the pass awaits before it goes on to
        // create the timer: admission is closed synchronously first.
        rig.harness.events.on("retry_scheduled", () => {
          aborting = lane.requestAbort(operationId);
        });
        const record = settledRecord(await lane.drive({ operationId, waitForRetry: true }));
        return { record, abort: aborting && unwrap(await aborting), rig, leftovers: leftoverOperationValues(rig.session, operationId) };
      },
      { steps: [flaky, { text: "never" }] },
    );
    expect(result.abort).toMatchObject({ newlyRequested: true });
    expect(result.record.status).toBe("aborted");
    expect(kinds(result.rig.events).slice(-4)).toEqual(["stats", "retry_scheduled", "operation_abort", "run_end"]);
    expect(result.leftovers).toEqual([]);
  });

  it("an abort marker on a waiting run is reconciled without a timer or another attempt", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await retrying(rig, 600_000);
        const first = unwrap(await lane.drive({ operationId }));
        unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await lane.drive({ operationId, waitForRetry: true }));
        return { first, record, briefs: briefs(lane), rig };
      },
      { steps: [flaky, { text: "never" }] },
    );
    expect(result.first).toMatchObject({ kind: "waiting", reason: "retry" });
    expect(result.record.status).toBe("aborted");
    expect(result.briefs).toEqual(["user: go", "assistant(error): "]);
    expect(kinds(result.rig.events).filter((type) => type.startsWith("retry_"))).toEqual(["retry_scheduled"]);
  });

  it("closing the harness rejects the local wait and writes nothing; the reopened lane still waits", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const { lane, operationId } = await retrying(rig, 600_000);
        const scheduled = nextEvent(rig.harness, (event) => event.type === "retry_scheduled");
        const driving = lane.drive({ operationId, waitForRetry: true });
        await scheduled;
        await sleep(20); // the pass has admitted its ten-minute timer by now
        await rig.harness.close();
        const observed = await driving.then(
          (value) => ({ settled: value }),
          (error: unknown) => ({ rejected: error instanceof Error ? error.name : String(error) }),
        );
        const reopened = await rig.reopen();
        const relane = await reopened.harness.lane("main");
        return { operationId, observed, open: reopened.open, info: relane.inspectExecution() };
      },
      { steps: [flaky, { text: "never" }] },
    );
    expect(result.observed).toEqual({ rejected: "HarnessClosed" });
    expect(result.open).toMatchObject([{ lane: "main", operationId: result.operationId, kind: "run" }]);
    expect(result.info.current).toMatchObject({ at: "assistant.retry_wait", status: "open" });
  });
});

describe("retry disabled", () => {
  it("a retryable error fails at once when the policy allows one attempt", async () => {
    const result = await withDriveRig(
      async (rig) => {
        await rig.harness.updateSettings({ retry: { enabled: false, maxRetries: 5, baseDelayMs: 1 } });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        return { record: settledRecord(await lane.drive({ operationId, waitForRetry: true })), rig };
      },
      { steps: [flaky, { text: "never" }] },
    );
    expect(result.record).toMatchObject({ status: "failed", error: { code: "provider_unavailable", details: { attempts: 1 } } });
    expect(kinds(result.rig.events).filter((type) => type.startsWith("retry_"))).toEqual([]);
  });
});
