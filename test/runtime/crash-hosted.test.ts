import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { toWire } from "../../schema/wire.ts";
import { createSession, sessionStub, unwrap } from "../helpers/sessions.ts";
import { objectInvariants } from "./invariants.ts";
import { never, shapeOf, stepsTaken, until } from "./crash-rig.ts";
import { idText } from "../../durable-objects/session/storage/stored-ids.ts";
import { value } from "../../harness/session/addresses.ts";

// The same crash matrix through the real hosting (ARCHITECTURE D7): acceptOperation starts the
// pass in the object, abortAllDurableObjects() kills it, and the fresh object's alarm (armed by
// its constructor because an operation is open: work due now has no due-work row) resumes the
// operation. An alarm may fire on its own before the test calls `instance.alarm()`: the
// assertions are about the final durable state.

type Stub = ReturnType<typeof sessionStub>;

async function hostedLane(steps: ScriptStep[], settings: HarnessSettingsPatch, park?: (instance: SessionObject) => Promise<void>) {
  const { name, stub } = await createSession("hosted");
  unwrap(await stub.acquireLane("main"));
  unwrap(await stub.updateSettings(toWire(settings)));
  unwrap(await stub.configureLane("main", toWire({ model: { provider: "scripted", modelId: "script" } })));
  await runInDurableObject(stub, async (instance: SessionObject) => {
    await appendScriptSteps(instance.session(), steps);
    await park?.(instance);
  });
  return { name, stub };
}

async function execution(stub: Stub): Promise<LaneExecutionInfo> {
  return unwrap(await stub.laneExecution("main"));
}

/** Polls (bounded) until the lane reports `at` for its current operation. */
async function untilLeaf(stub: Stub, at: string): Promise<void> {
  let seen: string | undefined;
  for (let i = 0; i < 1000 && seen !== at; i++) {
    seen = (await execution(stub)).current?.at;
    if (seen !== at) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  expect(seen).toBe(at);
}

/** Kills every object, runs the fresh object's alarm handler, and waits (bounded) until the lane is idle. */
async function killAndResume(name: string, operationId: string) {
  await abortAllDurableObjects();
  const fresh = sessionStub(name);
  const { due, armed } = await runInDurableObject(fresh, async (instance: SessionObject, state) => ({
    due: state.storage.sql.exec<{ operation_id: string }>(`SELECT ${idText("operation_id")} AS operation_id FROM due_work`).toArray().map((row) => row.operation_id),
    // Armed, unless an alarm delivered on its own already resumed the run (the lane is idle then).
    armed: (await state.storage.getAlarm()) !== null || instance.session().scanValues(value("pi.op.meta", "")).length === 0,
  }));
  await runInDurableObject(fresh, (instance: SessionObject) => instance.alarm());
  let info = await execution(fresh);
  for (let i = 0; i < 1000 && info.current !== null; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    info = await execution(fresh);
  }
  const view = unwrap(await fresh.operation("main", operationId));
  const after = await runInDurableObject(fresh, (instance: SessionObject, state) => ({
    shape: shapeOf(instance.session().scanBranch({ start: info.tipId ?? "", order: "oldestFirst" })),
    steps: stepsTaken(instance.session()),
    dueLeft: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM due_work").one().n,
    violations: objectInvariants(instance, state),
  }));
  return { due, armed, info, view, ...after };
}

describe("hosted crash recovery through the alarm", () => {
  it("a pass parked in before_run (leaf starting) is resumed by the fresh object's alarm", async () => {
    let parked = false;
    const { name, stub } = await hostedLane([{ text: "hosted answer" }], {}, async (instance) => {
      (await instance.harness()).hooks.on("before_run", () => {
        parked = true;
        return never();
      });
    });
    const admission = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "go" })));
    await until(() => parked, "before_run");
    await untilLeaf(stub, "starting");
    const resumed = await killAndResume(name, admission.operationId);
    // Work due now has no row; the restarted object armed the alarm for the open operation.
    expect(resumed.due).toEqual([]);
    expect(resumed.armed).toBe(true);
    expect(resumed.info.current).toBeNull();
    expect(resumed.view).toMatchObject({ state: "settled", result: { operationId: admission.operationId, status: "completed" } });
    expect(resumed.shape).toEqual([
      { role: "user", text: "go" },
      { role: "assistant", stopReason: "stop", text: "hosted answer" },
    ]);
    expect(resumed.steps).toBe(1);
    expect(resumed.dueLeft).toBe(0);
    expect(resumed.violations).toEqual([]);
  });

  it("a pass killed mid-stream settles the unknown outcome and retries at once (retry wait due now)", async () => {
    const long = Array.from({ length: 300 }, (_, i) => `t${i}`).join(" ");
    const { name, stub } = await hostedLane([{ text: long, chunkMs: 4 }, { text: "after the crash" }], {
      retry: { enabled: true, maxRetries: 1, baseDelayMs: 0 },
    });
    const admission = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "go" })));
    await untilLeaf(stub, "assistant.effect_pending");
    const resumed = await killAndResume(name, admission.operationId);
    expect(resumed.armed).toBe(true);
    expect(resumed.view).toMatchObject({ state: "settled", result: { status: "completed" } });
    expect(resumed.shape.map((s) => [s.role, s.stopReason])).toEqual([["user", undefined], ["assistant", "error"], ["assistant", "stop"]]);
    expect(long.startsWith(resumed.shape[1]?.text ?? "-")).toBe(true);
    expect(resumed.shape[2]?.text).toBe("after the crash");
    expect(resumed.steps).toBe(2);
    expect(resumed.dueLeft).toBe(0);
    expect(resumed.violations).toEqual([]);
  });

  it("a retry wait parked in the due-work table survives the kill and the alarm continues it when due", async () => {
    const { name, stub } = await hostedLane([{ error: "503 again", retryable: true }, { text: "finally" }], {
      retry: { enabled: true, maxRetries: 2, baseDelayMs: 500 },
    });
    const admission = unwrap(await stub.acceptOperation("main", toWire({ kind: "prompt", prompt: "go" })));
    await untilLeaf(stub, "assistant.retry_wait");
    const waiting = await execution(stub);
    expect(waiting.current).toMatchObject({ at: "assistant.retry_wait", status: "open" });
    const resumed = await killAndResume(name, admission.operationId);
    // Work due later is a row; the restarted object armed the alarm for it.
    expect([[admission.operationId], []]).toContainEqual(resumed.due);
    expect(resumed.armed).toBe(true);
    expect(resumed.view).toMatchObject({ state: "settled", result: { status: "completed" } });
    expect(resumed.shape.map((s) => [s.role, s.stopReason])).toEqual([["user", undefined], ["assistant", "error"], ["assistant", "stop"]]);
    expect(resumed.steps).toBe(2);
    expect(resumed.dueLeft).toBe(0);
    expect(resumed.violations).toEqual([]);
  });
});
