import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { toWire } from "../../schema/wire.ts";
import { createSession, failureCode, sessionStub, unwrap } from "../helpers/sessions.ts";
import { idText } from "../../durable-objects/session/storage/stored-ids.ts";

// Hosting in the SessionObject (ARCHITECTURE D7): acceptance starts the pass at once, the due-work
// table arms the one alarm, and the alarm resumes whatever a dead object left open.

async function scripted(stub: ReturnType<typeof sessionStub>, steps: Parameters<typeof appendScriptSteps>[1]) {
  await runInDurableObject(stub, (instance: SessionObject) => appendScriptSteps(instance.session(), steps));
}

/** Waits (bounded) until the session's settlement outbox is empty: every settlement reached its tenant. */
async function untilForwarded(stub: ReturnType<typeof sessionStub>): Promise<void> {
  const pending = () => runInDurableObject(stub, (_instance: SessionObject, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM settlement_outbox").one().n);
  for (let attempt = 0; attempt < 500 && (await pending()) > 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe("SessionObject hosting of lanes and runs", () => {
  it("accepts over RPC, drives at once, and answers the settled record for a long-poll", async () => {
    const { stub } = await createSession("host");
    const lane = unwrap(await stub.acquireLane("main"));
    expect(lane).toMatchObject({ name: "main", tipId: null, operation: null, created: true });
    expect(unwrap(await stub.acquireLane("main")).created).toBe(false);
    const admission = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "ping" })));
    const view = unwrap(await stub.operation("main", admission.operationId, 10_000));
    expect(view).toMatchObject({ state: "settled", result: { operationId: admission.operationId, status: "completed", kind: "run" } });
    const snapshot = unwrap(await stub.laneSnapshot("main"));
    expect(snapshot.transcript.map((entry) => entry.type === "message" && entry.message.role)).toEqual(["user", "assistant"]);
    expect(snapshot.lastResult?.operationId).toBe(admission.operationId);
    // The safety-net alarm armed at acceptance is left in place (moving or deleting it is a write
    // per turn): it fires once, finds nothing to do, and is not armed again. (The settlement's
    // forward to the tenant runs after the commit; on a loaded machine it may still be on its way,
    // and an unacknowledged outbox row rightly keeps an alarm: wait for it first.)
    await untilForwarded(stub);
    await runDurableObjectAlarm(stub);
    expect(unwrap(await stub.laneExecution("main"))).toMatchObject({ current: null, lastOperationId: admission.operationId });
    expect(await runDurableObjectAlarm(stub)).toBe(false);
  });

  it("resumes an accepted operation from the alarm after the object was killed", async () => {
    const { name, stub } = await createSession("host-crash");
    unwrap(await stub.acquireLane("main"));
    unwrap(await stub.updateSettings(toWire({ retry: { enabled: false, maxRetries: 0, baseDelayMs: 0 } })));
    await scripted(stub, [{ text: "slow answer that streams in chunks", chunkMs: 20 }]);
    unwrap(await stub.configureLane("main", toWire({ model: { provider: "scripted", modelId: "script" } })));
    const admission = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "go" })));
    // Kill the object while the provider is streaming (the request intent is committed).
    for (let i = 0; i < 200 && unwrap(await stub.laneExecution("main")).current?.at !== "assistant.effect_pending"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(unwrap(await stub.laneExecution("main")).current?.at).toBe("assistant.effect_pending");
    // Even an alarm lost meanwhile (agents#1119) is armed again by the restarted object.
    await runInDurableObject(stub, (_instance: SessionObject, state) => state.storage.deleteAlarm());
    await abortAllDurableObjects();
    const fresh = sessionStub(name);
    // The restarted object re-arms its alarm for the operation the dead pass left open: work due
    // now has no row (only work due later does); the open operation itself is what arms it.
    const armed = await runInDurableObject(fresh, async (_instance: SessionObject, state) => ({
      alarm: await state.storage.getAlarm(),
      due: state.storage.sql.exec<{ operation_id: string }>(`SELECT ${idText("operation_id")} AS operation_id FROM due_work`).toArray().map((row) => row.operation_id),
    }));
    expect(armed.due).toEqual([]);
    expect(armed.alarm).not.toBeNull();
    // The alarm handler (run here directly; a re-delivered alarm would just join) recovers it.
    await runInDurableObject(fresh, (instance: SessionObject) => instance.alarm());
    // An automatically delivered alarm may be running the same pass; the direct call then joined it.
    for (let i = 0; i < 200 && unwrap(await fresh.laneExecution("main")).current !== null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const after = unwrap(await fresh.laneExecution("main"));
    expect(after.current).toBeNull();
    expect(after.lastOperationId).toBe(admission.operationId);
    const record = unwrap(await fresh.operation("main", admission.operationId));
    // Recovered from the unknown outcome: a synthetic error response; with retries disabled the
    // run fails, with exactly one record.
    expect(record).toMatchObject({ state: "settled", result: { status: "failed", error: { code: "assistant_error" } } });
    const left = await runInDurableObject(fresh, (_instance: SessionObject, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM due_work").one().n,
    );
    expect(left).toBe(0);
  });

  it("parks a retry wait in the due-work table and lets the alarm continue it", async () => {
    const { stub } = await createSession("host-retry");
    unwrap(await stub.acquireLane("main"));
    unwrap(await stub.updateSettings(toWire({ retry: { enabled: true, maxRetries: 2, baseDelayMs: 1 } })));
    await scripted(stub, [{ error: "flaky", retryable: true }, { text: "recovered" }]);
    unwrap(await stub.configureLane("main", toWire({ model: { provider: "scripted", modelId: "script" } })));
    const admission = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "try" })));
    const view = unwrap(await stub.operation("main", admission.operationId, 10_000));
    expect(view).toMatchObject({ state: "settled", result: { status: "completed" } });
    const entries = unwrap(await stub.scanBranch("main", { order: "oldestFirst" }));
    expect(entries.map((entry) => (entry.type === "message" && entry.message.role === "assistant" ? entry.message.stopReason : "user"))).toEqual([
      "user",
      "error",
      "stop",
    ]);
  });

  it("tags lane errors for the edge", async () => {
    const { stub } = await createSession("host-errors");
    expect(failureCode(await stub.laneExecution("nope"))).toBe("UnknownLane");
    unwrap(await stub.acquireLane("main"));
    expect(failureCode(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "" })))).toBe("InvalidMessage");
    expect(failureCode(await stub.operation("main", "0190a000-0000-7000-8000-000000000000"))).toBe("OperationMismatch");
    expect(failureCode(await stub.abortOperation("main", "0190a000-0000-7000-8000-000000000000"))).toBe("OperationMismatch");
    expect(failureCode(await stub.acquireLane(""))).toBe("InvalidLane");
  });
});
