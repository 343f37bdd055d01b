import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import type { DurableLaneState } from "../../harness/runtime/types.ts";
import { list, value } from "../../harness/session/addresses.ts";
import { branchTip, laneState, operationState, pendingEntry } from "../../harness/session/builtin-addresses.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import { appendList, setValue } from "../../harness/session/writes.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import { createSession } from "../helpers/sessions.ts";
import { checkInvariants, objectInvariants } from "./invariants.ts";
import { acceptPrompt, attach, settledRecord, transcriptOf } from "./crash-rig.ts";

// The invariant checker must see what it claims to check: a clean run reports nothing, and each
// kind of corruption written directly into storage is reported.

describe("the R1 invariant checker", () => {
  it("reports nothing for a settled run and every planted corruption after it", async () => {
    const { stub } = await createSession("inv");
    const result = await runInDurableObject(stub, async (instance: SessionObject, state) => {
      await appendScriptSteps(instance.session(), [{ text: "clean" }]);
      const rig = await attach(instance);
      const lane = await rig.harness.lane("main");
      const operationId = await acceptPrompt(lane, "go");
      const record = settledRecord(await lane.drive({ operationId }));
      const clean = objectInvariants(instance, state);
      const assistantId = transcriptOf(lane)[1]?.id ?? "";
      const ghost = "01900000-0000-7000-8000-000000000001";
      const durable = rig.session.getValue(laneState<DurableLaneState>("main"))?.value;
      await rig.session.mutate((m) =>
        m.commit([
          setValue(operationState(operationId), { at: "checkpoint" }),
          setValue(value<string>("pi.op.tool_args", `${operationId}:step:0`), "{}"),
          setValue(pendingEntry(ghost), { type: "custom", customType: "x" }),
          appendList(list<string>("pi.pending.assistant_frame", `${operationId}:${assistantId}`), "frame"),
          setValue(branchTip("dangling"), ghost),
          setValue(laneState<DurableLaneState>("main"), {
            currentOperationId: null,
            lastOperationId: ghost,
            inbox: [...(durable?.inbox ?? []), { entryId: "01900000-0000-7000-8000-000000000002", kind: "steer" }],
          }),
        ]),
      );
      const base = SqlSessionStorage.open(state.storage);
      const ledger = { scanUsage: () => [...(base?.scanUsage() ?? []), { id: ghost, seq: 1e9, usage: { ...zeroUsage(), input: 7, totalTokens: 7 }, adjustment: true }] };
      return { record, clean, corrupt: checkInvariants(rig.session, { ledger }) };
    });
    expect(result.record.status).toBe("completed");
    expect(result.clean).toEqual([]);
    const expected = [
      /pi\.op\.state\/.* survives the terminal/,
      /pi\.op\.tool_args\/.* survives the terminal/,
      /pi\.pending\.entry\/01900000-0000-7000-8000-000000000001 is orphaned/,
      /pi\.pending\.assistant_frame\/.* survives settlement/,
      /branch "dangling" tip .* does not exist/,
      /last operation 01900000-0000-7000-8000-000000000001 has no pi\.result record/,
      /inbox item 01900000-0000-7000-8000-000000000002 \(steer\) of "main" has no pending payload/,
      /stats\.usage ≠ ledger sum/,
    ];
    for (const pattern of expected) expect(result.corrupt.some((violation) => pattern.test(violation)), String(pattern)).toBe(true);
    expect(result.corrupt).toHaveLength(expected.length);
  });
});
