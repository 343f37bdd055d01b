import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import type { TenantDetail } from "../../schema/data-lifecycle.ts";
import { tick } from "./deferred-helpers.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { order, type Wrapper } from "./race-helpers.ts";

// A deletion tick (durable-objects/tenant/data-lifecycle.ts) reads a batch of queued sessions,
// awaits their removal by their objects, then records them in its writing turn. Between the read
// and the write, the world moves on:
// - the client may delete the queued session itself and create a new one under its id: the
//   removal names the creation time the index held, so the new session (never queued, never idle)
//   is left as it is, with its index row;
// - the cron's retention sweep runs a tick outside the alarm, so a tenant deleted meanwhile has its
//   alarm's tick take the same batch: both remove the session, and only the one that takes it from
//   the queue counts it in the deletion's progress.

const DAY_MS = 86_400_000;
const admin = (path: string, method = "GET", body?: unknown) => call(`/v1/admin${path}`, { method, token: adminToken(), ...(body !== undefined && { body }) });

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

/** A tenant with a 30-day retention and one session idle for 31 days, its sweep due at the next cron tick. */
async function idleSessionDue(prefix: string, sessionId: string): Promise<{ tenantId: string; key: string }> {
  const { tenantId, key } = await newTenant(prefix);
  expect((await call("/v1/sessions", { body: { id: sessionId }, token: key })).status).toBe(201);
  expect((await admin(`/tenants/${tenantId}/quotas`, "PATCH", { sessionRetentionDays: 30 })).status).toBe(200);
  await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    state.storage.sql.exec("UPDATE sessions SET last_active_at = ? WHERE session_id = ?", Date.now() - 31 * DAY_MS, sessionId);
  });
  await runInDurableObject(env.TENANTS.getByName("admin:directory"), (_instance: TenantObject, state) => {
    state.storage.sql.exec("UPDATE tenant_directory SET retention_swept_at = 0 WHERE tenant_id = ?", tenantId);
  });
  return { tenantId, key };
}

describe("a retention tick's removal vs the client re-creating the session id", () => {
  it("the session created again after the queued one was deleted survives the tick that queued the old one", { timeout: 90_000 }, async () => {
    const { tenantId, key } = await idleSessionDue("rr_stale", "reused");

    // The tick's removal lands on the session object only once the client has deleted the idle
    // session and created a new one under its id (as a slow call between objects would).
    const calls = { n: 0 };
    const held: Wrapper = async (run, _args, points) => {
      calls.n++;
      if (calls.n === 1) await points.reached("recreated");
      return run();
    };
    const recreate: Wrapper = async (run, _args, points) => {
      const value = await run();
      points.signal("recreated");
      return value;
    };
    ({ restore } = await order([{ stub: env.SESSIONS.getByName(`${tenantId}:reused`), methods: { deleteSession: held, create: recreate } }]));
    const sweeping = tick();
    for (let i = 0; i < 3000 && calls.n < 1; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(calls.n).toBe(1);

    // The client deletes the idle session itself, then creates a new one under the same id.
    expect((await call("/v1/sessions/reused", { method: "DELETE", token: key })).status).toBe(204);
    expect((await call("/v1/sessions", { body: { id: "reused", metadata: { incarnation: "new" } }, token: key })).status).toBe(201);
    await sweeping;

    // The new session was never queued: it must still exist and be listed.
    const read = await call("/v1/sessions/reused", { token: key });
    expect(read.status).toBe(200);
    const listing = await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>();
    expect(listing.items.map((item) => item.id)).toContain("reused");
  });
});

describe("a retention tick vs the deleting tenant's alarm tick", () => {
  it("a session deleted by both ticks counts once in the deletion's progress", { timeout: 90_000 }, async () => {
    const { tenantId } = await idleSessionDue("rr_delcount", "idle");

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
