import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { call } from "./helpers.ts";
import { indexed, suspendedRun, tick } from "./deferred-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { eventually } from "./webhooks-helpers.ts";

// Issue 30 item 6a: the cron's poll permit (ARCHITECTURE D8) must not be lost when the sweep finds
// a pass already live on the suspended run that has no permit of its own (a client waiting on
// the operation, the alarm): joiners never add permits (reference §4.1), so the sweep's poll
// waits for that pass to end and then runs in a pass of its own. Lost, it slipped to the sweep's
// recheck, ~15 minutes later.

/** Resolves the before_drive hook holding the permit-less pass (set inside the session object). */
let releaseHeldPass: (() => void) | undefined;

describe("issue 30 item 6a: the sweep's poll permit", () => {
  it("a tick that finds a live pass without a permit still polls the run once that pass ends, with no further tick", async () => {
    const run = await suspendedRun("swpjoin", { text: "polled after the other pass" });
    await eventually(async () => ((await indexed(run.shard, run.operationId)) ? true : undefined), "the registration");
    await runInDurableObject(objectOf(run.tenantId, run.sid), async (instance: SessionObject) => {
      const harness = await instance.harness();
      const held = new Promise<void>((resolve) => {
        releaseHeldPass = resolve;
      });
      const off = harness.hooks.on("before_drive", async () => {
        off();
        await held;
      });
      const lane = harness.getLane("main");
      if (!lane) throw new Error("no lane");
      void lane.drive({ operationId: run.operationId });
      expect(lane.passInfo()).toMatchObject({ operationId: run.operationId, deferredPermits: 0 });
    });
    await tick();
    // Released from inside the object: the held pass continues in its own context.
    await runInDurableObject(objectOf(run.tenantId, run.sid), () => releaseHeldPass?.());
    const view = await (await call(`${run.lanePath}/operations/${run.operationId}?wait=10`, { token: run.key })).json();
    expect(view).toMatchObject({ state: "settled", result: { status: "completed" } });
  });
});
