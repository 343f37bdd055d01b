import { describe, expect, it } from "vitest";
import { HarnessClosed } from "../../harness/execution/errors.ts";
import { withRig } from "./helpers.ts";
import { expectOk, queued, settledRecord, transcript } from "./queue-helpers.ts";

// Idle ownership (reference §2.3): waitForIdle, runWhenIdle, and what close does to waiting callers.

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("idle ownership", () => {
  it("waitForIdle resolves at once on an idle lane, and for every waiter once the open operation settles", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      await lane.waitForIdle();
      const admission = expectOk(await lane.accept({ kind: "prompt", prompt: "hi" }));
      const resolved: string[] = [];
      const waiters = [lane.waitForIdle().then(() => resolved.push("a")), lane.waitForIdle().then(() => resolved.push("b"))];
      await tick();
      const beforeDrive = [...resolved];
      const record = settledRecord(await lane.drive({ operationId: admission.operationId, waitForRetry: true }));
      await Promise.all(waiters);
      return { beforeDrive, resolved: resolved.sort(), record, current: lane.inspectExecution().current };
    });
    expect(result.beforeDrive).toEqual([]);
    expect(result.resolved).toEqual(["a", "b"]);
    expect(result.record.status).toBe("completed");
    expect(result.current).toBeNull();
  });

  it("lanes() reports an operation open without a pass, running while a pass is live, aborting under cancel", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      const first = expectOk(await lane.accept({ kind: "prompt", prompt: "one" }));
      const open = harness.lanes()[0]?.operation?.status;
      let during: string | undefined;
      harness.hooks.on("before_request", () => void (during = harness.lanes()[0]?.operation?.status));
      settledRecord(await lane.drive({ operationId: first.operationId, waitForRetry: true }));
      const idle = harness.lanes()[0]?.operation;
      const second = expectOk(await lane.accept({ kind: "prompt", prompt: "two" }));
      expectOk(await lane.requestAbort(second.operationId));
      const aborting = harness.lanes()[0]?.operation?.status;
      return { open, during, idle, aborting };
    });
    expect(result).toEqual({ open: "open", during: "running", idle: null, aborting: "aborting" });
  });

  it("runWhenIdle waits for the open operation, then holds every lane command until the callback returns", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      const admission = expectOk(await lane.accept({ kind: "prompt", prompt: "first" }));
      const order: string[] = [];
      let steered: Promise<unknown> = Promise.resolve();
      const owned = lane.runWhenIdle(async () => {
        order.push("callback start");
        steered = lane.steer("held").then(() => order.push("steer committed"));
        await tick();
        order.push(`queue in callback: ${queued(lane).length}`);
        order.push("callback end");
        return "owned";
      });
      await tick();
      order.push("drive");
      settledRecord(await lane.drive({ operationId: admission.operationId, waitForRetry: true }));
      const value = await owned;
      await steered;
      return { order, value, queue: queued(lane), entries: transcript(lane) };
    });
    expect(result.value).toBe("owned");
    expect(result.order).toEqual(["drive", "callback start", "queue in callback: 0", "callback end", "steer committed"]);
    expect(result.queue).toEqual(["steer:held"]);
    expect(result.entries).toEqual(["user:first", "assistant:first"]);
  });

  it("the idle claim is released when the callback throws", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      const error = await lane.runWhenIdle(() => {
        throw new Error("callback failed");
      }).catch((e: unknown) => e);
      const steer = await lane.steer("after the failure");
      return { error, steer: steer.ok, queue: queued(lane) };
    });
    expect(result.error).toMatchObject({ message: "callback failed" });
    expect(result.steer).toBe(true);
    expect(result.queue).toEqual(["steer:after the failure"]);
  });

  it("close rejects a runWhenIdle callback that has not started; it never runs", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      expectOk(await lane.accept({ kind: "prompt", prompt: "left open" }));
      let ran = false;
      const waiting = lane.runWhenIdle(() => {
        ran = true;
      });
      const settled = waiting.then(
        () => "resolved",
        (error: unknown) => error,
      );
      await harness.close();
      const outcome = await settled;
      const afterClose = await lane.runWhenIdle(() => {
        ran = true;
      }).catch((error: unknown) => error);
      return { outcome, afterClose, ran };
    });
    expect(result.outcome).toBeInstanceOf(HarnessClosed);
    expect(result.afterClose).toBeInstanceOf(HarnessClosed);
    expect(result.ran).toBe(false);
  });
});
