import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import { toWire } from "../../schema/wire.ts";
import { createSession, unwrap } from "../helpers/sessions.ts";
import { idText } from "../../durable-objects/session/storage/stored-ids.ts";

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
      const rows = state.storage.sql.exec<{ operation_id: string; due_at: number }>(`SELECT ${idText("operation_id")} AS operation_id, due_at FROM due_work`).toArray();
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

describe("hardening 11: a fault reopen retires the old harness", () => {
  it("mutations queued on the faulted harness's line never commit, and its provider stream is aborted", { timeout: 20_000 }, async () => {
    const { stub } = await createSession("fault-reopen");
    unwrap(await stub.acquireLane("main"));
    const words = Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ");
    await runInDurableObject(stub, (instance: SessionObject) => appendScriptSteps(instance.session(), [{ text: words, chunkMs: 50 }]));
    unwrap(await stub.configureLane("main", toWire({ model: { provider: "scripted", modelId: "script" } })));
    const result = await runInDurableObject(stub, async (instance: SessionObject) => {
      const old = await instance.harness();
      const lane = old.getLane("main");
      if (!lane) throw new Error("no lane");
      let updates = 0;
      const streaming = new Promise<void>((resolve) =>
        old.events.on("message_update", () => {
          updates++;
          resolve();
        }),
      );
      unwrap(await instance.acceptOperation("main", toWire({ kind: "prompt", prompt: "talk for a long time" })));
      await streaming;
      const pass = lane.activePass;
      // A command queued on the old line before the fault...
      const scope = await instance.session().beginMutation();
      const late = lane.steer("queued before the fault").then(
        (result) => (result.ok ? "committed" : result.error.code),
        (error: unknown) => (error instanceof Error ? error.name : "rejected"),
      );
      old.fault(new Error("injected fault"));
      scope.end();
      const lateOutcome = await late;
      // ...and the old stream: it must stop long before its 20 s of chunks.
      const passOutcome = await Promise.race([
        (pass ?? Promise.resolve()).then(() => "settled", () => "stopped"),
        new Promise((resolve) => setTimeout(() => resolve("still streaming"), 4_000)),
      ]);
      const updatesAtStop = updates;
      // The next call reopens a new harness over the same storage.
      const oldSessionClosed = instance.session() !== undefined && old.faulted;
      const fresh = await instance.harness();
      const info = fresh.getLane("main")?.inspectExecution();
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { lateOutcome, passOutcome, updatesAfter: updates - updatesAtStop, replaced: fresh !== old, inbox: info?.queues.length, faulted: fresh.faulted, oldSessionClosed };
    });
    expect(result.lateOutcome).toBe("HarnessFault");
    expect(result.inbox).toBe(0);
    expect(result.passOutcome).toBe("stopped");
    expect(result.updatesAfter).toBe(0);
    expect(result.replaced).toBe(true);
    expect(result.faulted).toBe(false);
  });
});
