import { describe, expect, it } from "vitest";
import { CaptureStore } from "../../harness/runtime/captures.ts";
import { readOperation } from "../../harness/runtime/operation-codec.ts";
import { normalizeRetryPolicy } from "../../harness/runtime/settings.ts";
import type { DurableLaneState } from "../../harness/runtime/types.ts";
import { value } from "../../harness/session/addresses.ts";
import { laneState, legacyOperationMeta, legacyOperationState, operationMeta, operationState } from "../../harness/session/builtin-addresses.ts";
import { packUuid } from "../../harness/session/ids.ts";
import { ECHO } from "./helpers.ts";
import { settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";
import { checkInvariants } from "./invariants.ts";

// Durable forms written by earlier builds still restore (QUALITY P3 changed what a turn writes):
// a lane state naming its current operation, meta and state rows keyed by the operation id's text
// in the long form, a separate `pi.op.generation` row with two capture keys, and an effect row
// carrying its model limits. A session stored that way re-attaches,
// recovers the open effect and settles it. An operation the previous build stored in values of its
// own (short form, packed key) moves into its lane state with its first commit.

describe("earlier durable forms", () => {
  it("an open effect stored in the earlier forms restores, recovers and settles; its leftovers are deleted", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const first = unwrap(await lane.accept({ kind: "prompt", prompt: "first" }));
        settledRecord(await lane.drive({ operationId: first.operationId }));
        const tip = lane.state.tipId;
        if (tip === null) throw new Error("no tip");
        const { session } = rig;
        const ids = { op: session.idGenerator.next(), step: session.idGenerator.next(), response: session.idGenerator.next(), usage: session.idGenerator.next() };
        const captures = new CaptureStore();
        const settings = { compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 }, steeringMode: "all", followUpMode: "all", toolExecution: "parallel" };
        const keys = await session.mutate((m) => {
          const parts = [
            captures.capture(m, settings),
            captures.capture(m, { model: ECHO, thinkingLevel: "off", activeToolNames: [] }),
            captures.capture(m, { streamOptions: {}, retryPolicy: normalizeRetryPolicy({ enabled: true, maxRetries: 2, baseDelayMs: 0 }) }),
          ];
          m.commit(parts.flatMap((part) => part.writes));
          return parts.map((part) => part.key);
        });
        await session.setValue(legacyOperationMeta(ids.op), { lane: "main", sourceTipId: tip, startedAt: 1, intent: { kind: "run", promptEntryIds: [] }, settings: keys[0] ?? "" });
        await session.setValue(legacyOperationState(ids.op), {
          at: "assistant.effect_pending",
          attempt: 1,
          responseEntryId: ids.response,
          usageId: ids.usage,
          intendedOutputLimit: 1000,
          contextWindow: 2000,
        });
        await session.setValue(value("pi.op.generation", ids.op), { stepId: ids.step, triggerEntryId: tip, configuration: keys[1] ?? "", request: keys[2] ?? "" });
        await session.setValue(laneState<DurableLaneState>("main"), { currentOperationId: ids.op, lastOperationId: first.operationId, inbox: [] });
        await rig.harness.close();

        const reopened = await rig.reopen();
        const restored = readOperation(reopened.session, ids.op)?.state;
        const again = await reopened.harness.lane("main");
        const record = settledRecord(await again.drive({ operationId: ids.op }));
        return {
          open: reopened.open,
          restored,
          current: again.state.operation,
          record,
          leftovers: reopened.session.scanValues(value("pi.op.generation", "")).length,
          violations: checkInvariants(reopened.session),
          ids,
        };
      },
      { model: ECHO },
    );
    expect(result.open).toMatchObject([{ lane: "main", operationId: result.ids.op, kind: "run" }]);
    expect(result.restored).toMatchObject({
      at: "assistant.effect_pending",
      attempt: 1,
      intendedOutputLimit: 1000,
      contextWindow: 2000,
      generationContext: { stepId: result.ids.step, configuration: { model: ECHO }, retryPolicy: { maxAttempts: 3 } },
    });
    expect(result.current).toBeNull();
    expect(result.record).toMatchObject({ operationId: result.ids.op, status: "completed" });
    expect(result.leftovers).toBe(0);
    expect(result.violations).toEqual([]);
  });
  it("an operation the previous build left in its own meta and state values moves into its lane state with its first commit", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const tip = lane.state.tipId;
        const { session } = rig;
        const op = session.idGenerator.next();
        const captures = new CaptureStore();
        const settings = { compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 }, steeringMode: "all", followUpMode: "all", toolExecution: "parallel" };
        const settingsKey = await session.mutate((m) => {
          const captured = captures.capture(m, settings);
          m.commit(captured.writes);
          return captured.key;
        });
        // The previous build's form: short names, keyed by the packed id, the lane state idle.
        await session.setValue(operationMeta(op), { l: "main", s: tip, a: 1, i: { k: "run", p: [] }, c: settingsKey });
        await session.setValue(operationState(op), { "@": "c" });
        await rig.harness.close();
        const rows = (s: typeof session) => ["pi.op.meta", "pi.op.state"].flatMap((namespace) => s.scanValues(value(namespace, ""))).length;

        const reopened = await rig.reopen();
        const before = rows(reopened.session);
        const restored = await reopened.harness.lane("main");
        // Its first commit (the cancellation marker) stores it in the lane state and drops its rows.
        unwrap(await restored.requestAbort(op));
        const moved = { rows: rows(reopened.session), held: reopened.session.getValue(laneState<{ o?: { i: string } }>("main"))?.value.o?.i };
        await reopened.harness.close();

        // A restart then finds it once, in the lane state, and settles it.
        const again = await rig.reopen();
        const record = settledRecord(await (await again.harness.lane("main")).drive({ operationId: op }));
        return { op, open: again.open, before, moved, record, after: rows(again.session), violations: checkInvariants(again.session) };
      },
      { model: ECHO },
    );
    expect(result.before).toBe(2);
    expect(result.moved).toEqual({ rows: 0, held: packUuid(result.op) });
    expect(result.open).toMatchObject([{ operationId: result.op, aborting: true }]);
    expect(result.record).toMatchObject({ operationId: result.op, status: "aborted" });
    expect(result.after).toBe(0);
    expect(result.violations).toEqual([]);
  });
});
