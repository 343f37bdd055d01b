import { describe, expect, it } from "vitest";
import { readOperation } from "../../harness/runtime/operation-codec.ts";
import { longOperationForm, shortOperationForm } from "../../harness/runtime/operation-short-form.ts";
import { value } from "../../harness/session/addresses.ts";
import { operationIdOfKey, operationKey, operationMeta, operationState } from "../../harness/session/builtin-addresses.ts";
import { isPackedUuid, packUuid, uuidv7Timestamp } from "../../harness/session/ids.ts";
import { nextEvent, settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";
import { checkInvariants } from "./invariants.ts";

// An open operation's meta and state values are stored in a short form (QUALITY P3, bytes written
// per turn): keyed by the packed operation id, with short field names, leaf codes and packed UUIDs
// in the operation's own objects.
// Reading gives back exactly the value written; rows in the earlier long form read unchanged
// (test/runtime/durable-forms.test.ts restores a whole open effect stored that way).

const ID = (n: number): string => `01a235d0-27d8-73f0-9287-4b8e0648${String(n).padStart(4, "0")}`;

const configuration = {
  model: { provider: "scripted", modelId: "echo" },
  // A tool schema's keys are the user's: names the short form uses must pass through untouched.
  tools: [{ name: "t", parameters: { type: "object", properties: { at: { type: "string" }, kind: {}, l: {}, s: {} } } }],
};

/** One value of each shape the engine stores (meta, generation leaves, the others), long form. */
const VALUES: Record<string, object> = {
  meta: { lane: "main", sourceTipId: ID(1), startedAt: 1_796_199_163_864, intent: { kind: "run", promptEntryIds: [ID(2), ID(3)] }, settings: "1zq8v5hspea" },
  "meta, no tip, other ids": { lane: "side", sourceTipId: null, startedAt: 5, intent: { kind: "run", promptEntryIds: [ID(2), "client-id"] }, settings: "k" },
  "meta, navigation": { lane: "main", sourceTipId: ID(1), startedAt: 5, intent: { kind: "navigation", targetId: null, summarize: true, label: "x", customInstructions: "keep {at}" }, settings: "k" },
  effect: { at: "assistant.effect_pending", attempt: 1, responseEntryId: ID(4), usageId: ID(5), generation: { stepId: ID(6), triggerEntryId: ID(2), capture: "1p5s9m4cv5x" } },
  "effect, cancelled": {
    at: "assistant.effect_pending",
    attempt: 2,
    responseEntryId: ID(4),
    usageId: "usage-1",
    generation: { stepId: ID(6), triggerEntryId: ID(2), overflowRecoveryUsed: true, capture: "c" },
    control: { status: "cancel_requested", requestedAt: 9 },
    latestAssistantEntryId: ID(7),
  },
  ready: { at: "assistant.ready", nextAttempt: 1, generation: { stepId: ID(6), triggerEntryId: ID(2), capture: "c" } },
  checkpoint: { at: "checkpoint", continuation: { kind: "need_assistant", overflowRecoveryUsed: false }, triggerEntryId: ID(2), thresholdDone: true },
  tools: {
    at: "tools",
    batch: { assistantEntryId: ID(7), configuration, turnId: ID(8), truncated: false, calls: [{ sourceIndex: 0, resultEntryId: ID(9), status: "planned" }] },
  },
  "summary effect": {
    at: "summary.effect_pending",
    task: { taskId: ID(10), reason: "manual", boundary: { kind: "finish" } },
    summaryContext: { resultEntryId: ID(11), configuration, streamOptions: {}, retryPolicy: { maxAttempts: 3, baseDelayMs: 0 } },
    attempt: 1,
    request: { index: 0, usageId: ID(12) },
    usageIds: [ID(12)],
  },
  navigation: { at: "navigation.ready_to_commit", targetId: null, label: "here" },
  "unknown leaf": { at: "some.future_leaf", attempt: 3 },
};

describe("the short stored form of an open operation", () => {
  it.each(Object.entries(VALUES))("%s reads back exactly as written, in fewer bytes", (_name, value) => {
    const stored = shortOperationForm(value);
    expect(longOperationForm(JSON.parse(JSON.stringify(stored)))).toEqual(value);
    expect(JSON.stringify(stored).length).toBeLessThan(JSON.stringify(value).length);
  });

  it("shortens the operation's own fields only; ids that are not canonical UUIDs stay as their text", () => {
    expect(shortOperationForm(VALUES.effect ?? {})).toEqual({
      "@": "ae",
      n: 1,
      r: packUuid(ID(4)),
      u: packUuid(ID(5)),
      g: { S: packUuid(ID(6)), T: packUuid(ID(2)), C: "1p5s9m4cv5x" },
    });
    const tools = shortOperationForm(VALUES.tools ?? {});
    expect(tools.batch).toEqual((VALUES.tools as { batch: unknown }).batch);
    const mixed = shortOperationForm(VALUES["meta, no tip, other ids"] ?? {});
    expect(mixed).toMatchObject({ s: null, i: { k: "run", promptEntryIds: [ID(2), "client-id"] } });
  });

  it("keys meta and state by the packed operation id; keys of either form name their operation", () => {
    const id = ID(13);
    expect(operationMeta(id).key).toBe(packUuid(id));
    expect(operationState(id).key).toBe(packUuid(id));
    expect(operationIdOfKey(operationKey(id))).toBe(id);
    expect(operationIdOfKey(id)).toBe(id);
    expect(operationMeta("op-7").key).toBe("op-7");
    expect(operationIdOfKey("op-7")).toBe("op-7");
    // 22 characters that packUuid cannot have produced (padding bits set) stay a text id.
    expect(isPackedUuid("AaI10CfYc_CSh0uOBkgABB")).toBe(false);
    expect(operationIdOfKey("AaI10CfYc_CSh0uOBkgABB")).toBe("AaI10CfYc_CSh0uOBkgABB");
  });

  it("a run stores its meta and effect state short in its lane state; the open effect restores from them and settles", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const accepted = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
        const op = accepted.operationId;
        const streaming = nextEvent(rig.harness, (event) => event.type === "message_update");
        const driving = lane.drive({ operationId: op });
        await streaming;
        const laneState = rig.session.getValue(value<{ o?: { i: string; m: object; s?: object } }>("pi.lane.state", "main"))?.value;
        const stored = {
          // The open operation lives in its lane's state: no value of its own.
          keys: ["pi.op.meta", "pi.op.state"].flatMap((namespace) => rig.session.scanValues(value(namespace, "")).map((row) => row.address.key)),
          id: laneState?.o?.i,
          meta: laneState?.o?.m,
          state: laneState?.o?.s,
        };
        const read = readOperation(rig.session, op);
        const inMemory = lane.state.operation;
        const record = settledRecord(await driving);
        return { op, stored, read, inMemory, record, violations: checkInvariants(rig.session) };
      },
      { steps: [{ text: "a reply streamed in a few chunks to keep the effect open", chunkMs: 5 }] },
    );
    expect(result.stored.keys).toEqual([]);
    expect(result.stored.id).toBe(packUuid(result.op));
    // The lane is the value's key, not repeated in the meta; the start is stored after the time
    // the id carries, a run's intent without its kind.
    expect(Object.keys(result.stored.meta ?? {}).sort()).toEqual(["c", "d", "i", "s"]);
    expect(result.stored.meta).toMatchObject({ d: result.inMemory ? result.inMemory.meta.startedAt - uuidv7Timestamp(result.op) : -1, i: { p: [expect.any(String)] } });
    expect(result.stored.state).toMatchObject({ "@": "ae", n: 1, g: { C: expect.any(String) } });
    expect(result.read).toEqual({ meta: result.inMemory?.meta, state: result.inMemory?.state });
    expect(result.read?.meta).toMatchObject({ operationId: result.op, lane: "main", intent: { kind: "run" } });
    expect(result.read?.state.at).toBe("assistant.effect_pending");
    expect(result.record).toMatchObject({ operationId: result.op, status: "completed" });
    expect(result.violations).toEqual([]);
  });
});
