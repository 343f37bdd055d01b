import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import type { TenantDetail } from "../../schema/data-lifecycle.ts";
import { tick } from "./deferred-helpers.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { order, type Wrapper } from "./race-helpers.ts";

// A deletion tick reads a batch of queued sessions, awaits their removal, then counts them into the
// tenant deletion's progress. The cron's retention sweep runs a tick outside the alarm, so a tenant
// deleted while that tick awaits has its alarm's tick take the same batch: both remove the session,
// and only the one that takes it from the queue counts it.

const DAY_MS = 86_400_000;
const admin = (path: string, method = "GET", body?: unknown) => call(`/v1/admin${path}`, { method, token: adminToken(), ...(body !== undefined && { body }) });

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

describe("a retention tick vs the deleting tenant's alarm tick", () => {
  it("a session deleted by both ticks counts once in the deletion's progress", { timeout: 90_000 }, async () => {
    const { tenantId, key } = await newTenant("rr_delcount");
    expect((await call("/v1/sessions", { body: { id: "idle" }, token: key })).status).toBe(201);
    expect((await admin(`/tenants/${tenantId}/quotas`, "PATCH", { sessionRetentionDays: 30 })).status).toBe(200);
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE sessions SET last_active_at = ? WHERE session_id = ?", Date.now() - 31 * DAY_MS, "idle");
    });
    await runInDurableObject(env.TENANTS.getByName("admin:directory"), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE tenant_directory SET retention_swept_at = 0 WHERE tenant_id = ?", tenantId);
    });

    // The first removal of the session (the retention sweep's) waits until a second one (the
    // deleting tenant's alarm) has reached the session: both ticks read it in their batch.
    const calls = { n: 0 };
    const held: Wrapper = async (run, _args, points) => {
      calls.n++;
      if (calls.n === 1) {
        points.signal("first");
        await points.reached("second");
      } else points.signal("second");
      return run();
    };
    ({ restore } = await order([{ stub: env.SESSIONS.getByName(`${tenantId}:idle`), methods: { deleteSession: held } }]));
    const sweeping = tick();
    for (let i = 0; i < 3000 && calls.n < 1; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(calls.n).toBe(1);

    const deleted = await admin(`/tenants/${tenantId}`, "DELETE");
    expect(deleted.status).toBe(202);
    await sweeping;
    // The alarm's tick ends by arming the grace period's end (15 s after the deletion began).
    let detail: TenantDetail | undefined;
    for (let i = 0; i < 400; i++) {
      const alarm = await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => state.storage.getAlarm());
      detail = await (await admin(`/tenants/${tenantId}`)).json<TenantDetail>();
      if (calls.n >= 2 && alarm !== null && alarm > Date.now() + 2_000 && detail.deletion?.sessionsRemaining === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(calls.n).toBe(2);
    expect(detail?.deletion).toMatchObject({ sessionsRemaining: 0, sessionsDeleted: 1, sessionsTotal: 1 });
  });
});
