import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AlarmDeletions, TenantHost } from "../../durable-objects/tenant/tenant-host.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { TenantWebhooks } from "../../durable-objects/tenant/webhooks/tenant-webhooks.ts";
import { newTenant } from "./helpers.ts";
import { register } from "./webhooks-helpers.ts";

// The tenant's one alarm reads when the webhook outbox next wants it early in its run, then waits
// for its other parts (watch closes, a batch of session deletions). A settlement forwarded
// meanwhile enqueues a delivery due now and arms the alarm for now; the run's end must not push
// that alarm back to the time it read before (here a retry an hour away). docs/webhooks.md: an
// event can arrive "a little after the operation ended", not an hour later.

describe("a delivery enqueued while the tenant's alarm runs", () => {
  it("keeps the alarm armed for it: the run's end arms no later, earlier-read time over it", async () => {
    const { tenantId, key } = await newTenant("whalarmrun");
    await register(key, "http://127.0.0.1:9/alarm-run");
    const tenant = env.TENANTS.getByName(tenantId);
    const result = await runInDurableObject(tenant, async (instance: TenantObject, state) => {
      const host: TenantHost = Reflect.get(instance, "host");
      const webhooks = new TenantWebhooks(state.storage.sql);
      const now = Date.now();
      // One delivery waiting for its retry an hour from now.
      webhooks.enqueue([{ id: `evt_${"a".repeat(32)}`, type: "operation.settled", body: "{}" }], now);
      state.storage.sql.exec("UPDATE webhook_deliveries SET next_attempt_at = ?", now + 3_600_000);
      await state.storage.deleteAlarm();

      // The run's deletion part is slow (a batch of sessions being deleted).
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const deletions: AlarmDeletions = {
        tick: async () => {
          await gate;
          return undefined;
        },
        finish: async () => undefined,
      };
      const run = host.alarm(deletions);
      // Let the webhook part of the run finish (nothing is due: it answers the retry's time).
      await new Promise((resolve) => setTimeout(resolve, 50));

      // Meanwhile a session forwards a settlement: its delivery is due now and the alarm is armed now.
      const settledAt = Date.now();
      await instance.operationsSettled("s_alarm_run", [
        { operationId: "op-alarm-run", lane: "main", settledAt, result: { kind: "run", status: "completed", endedAt: settledAt } },
      ]);
      release();
      await run;
      const ranUntil = Date.now();

      const earliestPending = state.storage.sql
        .exec<{ due: number }>("SELECT MIN(next_attempt_at) AS due FROM webhook_deliveries WHERE status = 'pending'")
        .one().due;
      return { alarm: await state.storage.getAlarm(), earliestPending, ranUntil, retryAt: now + 3_600_000 };
    });
    // The new delivery is pending and due now; the alarm fires for it now, not in an hour. (The
    // platform may set an alarm asked for a past time a moment later, when it is set: the run's end
    // is the bound.)
    expect(result.earliestPending).toBeLessThan(result.retryAt);
    expect(result.alarm).not.toBeNull();
    expect(result.alarm ?? Infinity).toBeLessThanOrEqual(result.ranUntil);
  });
});
