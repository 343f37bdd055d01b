import { describe, expect, it } from "vitest";
import type { BusyPromptAnswer } from "../../harness/runtime/busy-prompts.ts";
import type { PendingAdmission } from "../../harness/runtime/pending-runs.ts";
import type { Result } from "../../harness/runtime/errors.ts";
import { ECHO } from "./helpers.ts";
import { briefs, unwrap, withDriveRig } from "./drive-helpers.ts";

// An operation id a client chooses "must be a UUIDv7 not used before in the session (400
// InvalidOperationId otherwise)" (docs/api-lanes.md), and a record "never changes once written"
// (docs/reliability.md). A pending run's id is taken session-wide, like a running operation's: its
// stored request (`pi.pending.run/{id}`) and its record (`pi.result/{id}`) are one value each in the
// session. Before, only each lane's current operation and the lane's own pending line were asked:
// a second lane took the id, overwrote the stored request (lane A ran lane B's prompt), faulted the
// harness at its turn, or had its record overwritten by lane A's refused start.

function pending(answer: BusyPromptAnswer): PendingAdmission {
  if (!("admission" in answer) || !("state" in answer.admission)) throw new Error(`expected a pending run, got ${JSON.stringify(answer)}`);
  return answer.admission;
}

function outcomeOf(result: Result<unknown>): { ok: true } | { ok: false; code: string } {
  return result.ok ? { ok: true } : { ok: false, code: result.error.code };
}

describe("operation ids of pending runs are unique in the session", () => {
  it("an id waiting as a pending run on lane A is refused as a pending run on lane B (and B's turn does not fault the harness)", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const a = await rig.harness.lane("a");
        const b = await rig.harness.lane("b");
        const runningA = unwrap(await a.accept({ kind: "prompt", prompt: "running on a" }));
        const runningB = unwrap(await b.accept({ kind: "prompt", prompt: "running on b" }));
        const shared = rig.session.idGenerator.next();
        pending(unwrap(await a.acceptWhileBusy({ kind: "prompt", prompt: "pending for a", operationId: shared }, "enqueue")));
        const duplicate = outcomeOf(await b.acceptWhileBusy({ kind: "prompt", prompt: "pending for b", operationId: shared }, "enqueue"));

        // Let both lanes take their turns: lane A first (its pending run starts and runs), then lane B.
        const aDrive = await a.drive({ operationId: runningA.operationId });
        const startedOnA = a.state.operation?.meta.operationId;
        if (startedOnA) await a.drive({ operationId: startedOnA });
        const aTranscript = briefs(a);
        let bDrive: string;
        try {
          const driven = await b.drive({ operationId: runningB.operationId });
          bDrive = driven.ok ? driven.value.kind : driven.error.code;
        } catch (error) {
          bDrive = `threw: ${error instanceof Error ? error.message : String(error)}`;
        }
        return { duplicate, aDrive: aDrive.ok && aDrive.value.kind, startedOnA, shared, bDrive, aTranscript };
      },
      { model: ECHO },
    );
    // The second use of the id must be refused, writing nothing.
    expect(result.duplicate).toEqual({ ok: false, code: "InvalidOperationId" });
    expect(result.aDrive).toBe("settled");
    expect(result.startedOnA).toBe(result.shared);
    // Lane B's operation settles normally (its turn finds its own line, not a stored request taken from it).
    expect(result.bDrive).toBe("settled");
    // Lane A's pending run answers lane A's own prompt.
    expect(result.aTranscript.filter((line) => line.startsWith("user:"))).toEqual(["user: running on a", "user: pending for a"]);
  });

  it("an id waiting as a pending run on lane A is refused by an acceptance on idle lane B; the record of that id never changes", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const a = await rig.harness.lane("a");
        const b = await rig.harness.lane("b");
        const runningA = unwrap(await a.accept({ kind: "prompt", prompt: "running on a" }));
        const shared = rig.session.idGenerator.next();
        pending(unwrap(await a.acceptWhileBusy({ kind: "prompt", prompt: "pending for a", operationId: shared }, "enqueue")));
        const onB = await b.accept({ kind: "prompt", prompt: "on b", operationId: shared });
        let firstRecord: unknown;
        if (onB.ok) {
          const driven = unwrap(await b.drive({ operationId: shared }));
          firstRecord = driven.kind === "settled" ? driven.outcome : undefined;
        }
        // Lane A's turn comes: its pending run with that id.
        await a.drive({ operationId: runningA.operationId });
        return { onB: outcomeOf(onB), firstRecord, recordNow: b.getResult(shared), pendingOnA: a.pendingRuns().map((run) => run.operationId) };
      },
      { model: ECHO },
    );
    expect(result.onB).toEqual({ ok: false, code: "InvalidOperationId" });
    // Had it been accepted, its record must at least stay what it was when written (lane A's turn
    // must not overwrite it with a failed "could not start" one).
    if (result.firstRecord !== undefined) expect(result.recordNow).toEqual(result.firstRecord);
  });
});
