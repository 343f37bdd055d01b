import { describe, expect, it } from "vitest";
import { DrivePassFailed } from "../../harness/runtime/driver.ts";
import type { DriveOutcome } from "../../harness/runtime/types.ts";
import { uuidv7 } from "@earendil-works/pi-ai/utils/uuid";
import type { Result } from "../../harness/runtime/errors.ts";
import { briefs, heldHook, kinds, nextEvent, ofType, settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";
import { leftoverOperationValues } from "./helpers.ts";

// drive(id) is total over ids (reference §4.1): the current operation installs or joins the one
// pass, a settled id answers its record (across reopen), anything else is OperationMismatch.

describe("drive: one pass per operation", () => {
  it("concurrent drives of the current id join one pass: before_drive runs once, joiner options are ignored", async () => {
    const result = await withDriveRig(
      async (rig) => {
        await rig.harness.updateSettings({ retry: { enabled: true, maxRetries: 1, baseDelayMs: 600_000 } });
        let beforeDrive = 0;
        rig.harness.hooks.on("before_drive", () => {
          beforeDrive++;
        });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        const installer = lane.drive({ operationId });
        // The joiner asks to wait for retries; the installed pass does not, and its options win.
        const joiner = lane.drive({ operationId, waitForRetry: true });
        const outcomes = [unwrap(await installer), unwrap(await joiner)];
        const afterFirstPass = beforeDrive;
        // A later drive starts a new pass, which runs before_drive again.
        const again = unwrap(await lane.drive({ operationId }));
        return { operationId, outcomes, again, afterFirstPass, beforeDrive };
      },
      { steps: [{ error: "flaky", retryable: true }] },
    );
    const waiting = { kind: "waiting", operationId: result.operationId, reason: "retry" };
    expect(result.outcomes).toMatchObject([waiting, waiting]);
    expect(result.outcomes[0]).toEqual(result.outcomes[1]);
    expect(result.afterFirstPass).toBe(1);
    expect(result.again).toEqual(result.outcomes[0]);
    expect(result.beforeDrive).toBe(2);
  });

  it("a drive of a new id while the previous pass is still finishing waits for it, then installs", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const first = unwrap(await lane.accept({ kind: "prompt", prompt: "one" }));
        let second: Promise<Result<DriveOutcome>> | undefined;
        // run_end is delivered while the first pass still awaits it: its drive is still active.
        const off = rig.harness.events.on("run_end", () => {
          off();
          second = lane.accept({ kind: "prompt", prompt: "two" }).then((accepted) => lane.drive({ operationId: unwrap(accepted).operationId }));
        });
        const firstRecord = settledRecord(await lane.drive({ operationId: first.operationId }));
        if (!second) throw new Error("the run_end listener did not run");
        const secondRecord = settledRecord(await second);
        return { firstRecord, secondRecord, briefs: briefs(lane) };
      },
      { steps: [{ text: "first" }, { text: "second" }] },
    );
    expect(result.firstRecord.status).toBe("completed");
    expect(result.secondRecord).toMatchObject({ status: "completed", fromTipId: result.firstRecord.tipId });
    expect(result.briefs).toEqual(["user: one", "assistant(stop): first", "user: two", "assistant(stop): second"]);
  });
});

describe("drive: total over ids", () => {
  it("an unknown id is OperationMismatch and affects nothing", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const done = settledRecord(await lane.drive({ operationId: unwrap(await lane.accept({ kind: "prompt", prompt: "a" })).operationId }));
        const idle = await lane.drive({ operationId: uuidv7() });
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "b" }));
        const before = { info: lane.inspectExecution(), events: rig.events.length };
        const stranger = uuidv7();
        const busy = await lane.drive({ operationId: stranger });
        const abort = await lane.requestAbort(stranger);
        const after = { info: lane.inspectExecution(), events: rig.events.length };
        // A settled id while another operation is current answers its record.
        const old = unwrap(await lane.drive({ operationId: done.operationId }));
        return { done, idle, busy, abort, before, after, operationId, old, stranger };
      },
      { steps: [{ text: "A" }, { text: "B" }] },
    );
    expect(result.idle).toEqual({ ok: false, error: expect.objectContaining({ code: "OperationMismatch", lastOperationId: result.done.operationId }) });
    expect(result.busy).toEqual({
      ok: false,
      error: { code: "OperationMismatch", lane: "main", expectedOperationId: result.stranger, currentOperationId: result.operationId, lastOperationId: result.done.operationId },
    });
    expect(result.abort).toMatchObject({ ok: false, error: { code: "OperationMismatch", currentOperationId: result.operationId } });
    expect(result.after).toEqual(result.before);
    expect(result.before.info.current).toMatchObject({ id: result.operationId, at: "starting", status: "open" });
    expect(result.old).toEqual({ kind: "settled", outcome: result.done });
  });

  it("a settled id answers {settled, record}, also from a harness re-created on the same session", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const ids: string[] = [];
        for (const prompt of ["a", "b"]) {
          const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt }));
          ids.push(operationId);
          settledRecord(await lane.drive({ operationId }));
        }
        const records = ids.map((id) => lane.getResult(id));
        await rig.harness.close();
        const closedDrive = await lane.drive({ operationId: ids[0] ?? "" });
        const reopened = await rig.reopen();
        const relane = await reopened.harness.lane("main");
        const answers = await Promise.all(ids.map((operationId) => relane.drive({ operationId })));
        return { records, closedDrive, open: reopened.open, answers, lookups: ids.map((id) => relane.getResult(id)) };
      },
      { steps: [{ text: "A" }, { text: "B" }] },
    );
    expect(result.records.map((record) => record?.status)).toEqual(["completed", "completed"]);
    expect(result.closedDrive).toEqual({ ok: false, error: { code: "Closed" } });
    expect(result.open).toEqual([]);
    expect(result.answers).toEqual(result.records.map((record) => ({ ok: true, value: { kind: "settled", outcome: record } })));
    expect(result.lookups).toEqual(result.records);
  });
});

describe("drive: caller cancellation", () => {
  it("aborting a caller's signal rejects only that caller; the pass continues and settles", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        // An already-aborted caller is rejected and installs nothing.
        const gone = AbortSignal.abort(new Error("gone before"));
        const early = await lane.drive({ operationId }, { signal: gone }).then(() => "resolved", (error: unknown) => String(error));
        const statusAfterEarly = lane.inspectExecution().current?.status;
        const caller = new AbortController();
        const streaming = nextEvent(rig.harness, (event) => event.type === "message_start" && event.message.role === "assistant");
        const installer = lane.drive({ operationId }, { signal: caller.signal });
        const joiner = lane.drive({ operationId });
        await streaming;
        caller.abort(new Error("the caller left"));
        const rejected = await installer.then(() => "resolved", (error: unknown) => String(error));
        const statusAfterLeave = lane.inspectExecution().current?.status;
        const record = settledRecord(await joiner);
        return { early, statusAfterEarly, rejected, statusAfterLeave, record, briefs: briefs(lane), rig, leftovers: leftoverOperationValues(rig.session, operationId) };
      },
      { steps: [{ text: "one two three four five", chunkMs: 20 }] },
    );
    expect(result.early).toBe("Error: gone before");
    expect(result.statusAfterEarly).toBe("open");
    expect(result.rejected).toBe("Error: the caller left");
    expect(result.statusAfterLeave).toBe("running");
    expect(result.record.status).toBe("completed");
    expect(result.briefs).toEqual(["user: go", "assistant(stop): one two three four five"]);
    expect(kinds(result.rig.events)).not.toContain("operation_abort");
    expect(result.leftovers).toEqual([]);
  });
});

describe("drive: before_drive failure (D14.24)", () => {
  it("a throwing before_drive fails that pass only: nothing is written, the harness does not fault, a later drive succeeds", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const off = rig.harness.hooks.on("before_drive", () => {
          throw new Error("not now");
        });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        const eventsBefore = rig.events.length;
        const failure = await lane.drive({ operationId }).then(
          () => undefined,
          (error: unknown) => error,
        );
        const afterFailure = { info: lane.inspectExecution(), faulted: rig.harness.faulted, closed: rig.harness.closed, events: rig.events.slice(eventsBefore) };
        off();
        const record = settledRecord(await lane.drive({ operationId }));
        return { failure, afterFailure, record, briefs: briefs(lane) };
      },
      { steps: [{ text: "fine" }] },
    );
    expect(result.failure).toBeInstanceOf(DrivePassFailed);
    expect(result.failure instanceof DrivePassFailed && result.failure.message).toBe("before_drive failed: not now");
    expect(result.afterFailure.faulted).toBe(false);
    expect(result.afterFailure.closed).toBe(false);
    expect(result.afterFailure.info.current).toMatchObject({ at: "starting", status: "open" });
    expect(result.afterFailure.events).toEqual([{ type: "handler_error", kind: "hook", hook: "before_drive", error: "not now", lane: "main" }]);
    expect(result.record.status).toBe("completed");
    expect(result.briefs).toEqual(["user: go", "assistant(stop): fine"]);
  });
});

describe("drive: before_drive against abort", () => {
  it("a before_drive that rejects because its signal was aborted is not a pass failure: the run ends aborted", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const held = heldHook();
        rig.harness.hooks.on("before_drive", async (_event, { signal }) => {
          const aborted = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true }));
          await Promise.race([held.hold(signal), aborted]);
        });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        const driving = lane.drive({ operationId });
        await held.entered;
        unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await driving);
        return { record, faulted: rig.harness.faulted, briefs: briefs(lane) };
      },
      { steps: [{ text: "never" }] },
    );
    expect(result.record.status).toBe("aborted");
    expect(result.faulted).toBe(false);
    expect(result.briefs).toEqual(["user: go"]);
  });
});

describe("drive: live status (D14.2)", () => {
  it("open when accepted but not driven, running while a pass is live, aborting under cancel without a pass", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const held = heldHook();
        rig.harness.hooks.on("before_request", (_event, { signal }) => held.hold(signal));
        const lane = await rig.harness.lane("main");
        const statuses: (string | undefined)[] = [];
        const snap = () => statuses.push(lane.inspectExecution().current?.status);
        const first = unwrap(await lane.accept({ kind: "prompt", prompt: "one" }));
        snap(); // open
        const driving = lane.drive({ operationId: first.operationId });
        await held.entered;
        snap(); // running
        const infoRunning = lane.inspectExecution();
        const lanes = rig.harness.lanes();
        held.release();
        settledRecord(await driving);
        snap(); // none
        const second = unwrap(await lane.accept({ kind: "prompt", prompt: "two" }));
        unwrap(await lane.requestAbort(second.operationId));
        snap(); // aborting
        const open = lane.inspectExecution();
        const record = settledRecord(await lane.drive({ operationId: second.operationId }));
        snap(); // none
        return { statuses, infoRunning, lanes, open, record };
      },
      { steps: [{ text: "A" }] },
    );
    expect(result.statuses).toEqual(["open", "running", undefined, "aborting", undefined]);
    // Preparing the first request happens in `starting` (the start writes no commit of its own), so no
    // generation, and no captured model, is durable yet.
    expect(result.infoRunning.current).toMatchObject({ at: "starting", status: "running", kind: "run" });
    expect(result.infoRunning.current).not.toHaveProperty("capturedModel");
    expect(result.lanes).toMatchObject([{ name: "main", operation: { status: "running" } }]);
    expect(result.open.current).toMatchObject({ at: "starting", status: "aborting" });
    expect(result.record.status).toBe("aborted");
  });

  it("a pass that reaches a durable wait clears the active drive (open again)", async () => {
    const result = await withDriveRig(
      async (rig) => {
        await rig.harness.updateSettings({ retry: { enabled: true, maxRetries: 1, baseDelayMs: 600_000 } });
        const lane = await rig.harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        const outcome = unwrap(await lane.drive({ operationId }));
        return { outcome, info: lane.inspectExecution(), events: ofType(rig.events, "retry_scheduled").length };
      },
      { steps: [{ error: "flaky", retryable: true }] },
    );
    expect(result.outcome).toMatchObject({ kind: "waiting", reason: "retry" });
    expect(result.info.current).toMatchObject({ at: "assistant.retry_wait", status: "open" });
    expect(result.events).toBe(1);
  });
});
