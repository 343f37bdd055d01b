import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import { toWire } from "../../schema/wire.ts";
import { createSession, unwrap } from "../helpers/sessions.ts";

// Engine hardening, hosting: each test reproduces one defect found in review.

describe("hardening 5: one failing drive does not stop the alarm", () => {
  it("a lane whose pass fails persistently beside a lane in a retry wait: the alarm completes, stays armed, and postpones the failing row", async () => {
    const { stub } = await createSession("due-failing");
    unwrap(await stub.acquireLane("failing"));
    unwrap(await stub.acquireLane("waiting"));
    unwrap(await stub.updateSettings(toWire({ retry: { enabled: true, maxRetries: 2, baseDelayMs: 600_000 } })));
    await runInDurableObject(stub, (instance: SessionObject) => appendScriptSteps(instance.session(), [{ error: "flaky", retryable: true }]));
    unwrap(await stub.configureLane("waiting", toWire({ model: { provider: "scripted", modelId: "script" } })));
    const waiting = unwrap(await stub.acceptOperation("waiting", toWire({ kind: "prompt", prompt: "wait" })));
    expect(unwrap(await stub.operation("waiting", waiting.operationId, 5_000))).toMatchObject({ state: "active", at: "assistant.retry_wait" });

    // Every pass of the failing lane throws in before_drive (a pass-local failure, D14.24).
    await runInDurableObject(stub, async (instance: SessionObject) => {
      (await instance.harness()).hooks.on("before_drive", (event) => {
        if (event.lane === "failing") throw new Error("this lane's passes always fail");
      });
    });
    const failing = unwrap(await stub.acceptOperation("failing", toWire({ kind: "prompt", prompt: "fail" })));

    const after = await runInDurableObject(stub, async (instance: SessionObject, state) => {
      const before = Date.now();
      const outcome = await instance.alarm().then(
        () => "completed",
        (error: unknown) => `threw: ${error instanceof Error ? error.message : String(error)}`,
      );
      const rows = state.storage.sql.exec<{ operation_id: string; due_at: number }>("SELECT operation_id, due_at FROM due_work").toArray();
      return { outcome, alarm: await state.storage.getAlarm(), rows, before };
    });
    expect(after.outcome).toBe("completed");
    expect(after.alarm).not.toBeNull();
    const dueOf = (id: string) => after.rows.find((row) => row.operation_id === id)?.due_at;
    // The retry wait is still scheduled; the failing operation is retried later, not in a hot loop.
    expect(dueOf(waiting.operationId)).toBeGreaterThan(after.before + 60_000);
    expect(dueOf(failing.operationId)).toBeGreaterThan(after.before + 10_000);
    expect(after.alarm).toBe(Math.min(...after.rows.map((row) => row.due_at)));
  });
});
