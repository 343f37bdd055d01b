import { describe, expect, it } from "vitest";
import { CaptureStore } from "../../harness/runtime/captures.ts";
import { readOperation } from "../../harness/runtime/operation-codec.ts";
import { normalizeRetryPolicy } from "../../harness/runtime/settings.ts";
import type { DurableLaneState } from "../../harness/runtime/types.ts";
import { value } from "../../harness/session/addresses.ts";
import { laneState, legacyOperationMeta, legacyOperationState } from "../../harness/session/builtin-addresses.ts";
import { ECHO } from "./helpers.ts";
import { settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";
import { checkInvariants } from "./invariants.ts";

// Durable forms written by earlier builds still restore (QUALITY P3 changed what a turn writes):
// a lane state naming its current operation, meta and state rows keyed by the operation id's text
// in the long form, a separate `pi.op.generation` row with two capture keys, and an effect row
// carrying its model limits. A session stored that way re-attaches,
// recovers the open effect and settles it.

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
});
