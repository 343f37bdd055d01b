import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { tick } from "./deferred-helpers.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { order, type Wrapper } from "./race-helpers.ts";

// A deletion tick (durable-objects/tenant/data-lifecycle.ts) reads a batch of queued sessions,
// then awaits their removal. The removal names the incarnation the index holds (its creation
// time): when the client deletes that session itself and creates a new one under the same id while
// the tick's call is on its way, the new session (never queued, never idle) is left as it is, with
// its index row.

const DAY_MS = 86_400_000;
const admin = (path: string, method = "GET", body?: unknown) => call(`/v1/admin${path}`, { method, token: adminToken(), ...(body !== undefined && { body }) });

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

describe("a retention tick's removal vs the client re-creating the session id", () => {
  it("the session created again after the queued one was deleted survives the tick that queued the old one", { timeout: 90_000 }, async () => {
    const { tenantId, key } = await newTenant("rr_stale");
    expect((await call("/v1/sessions", { body: { id: "reused" }, token: key })).status).toBe(201);
    expect((await admin(`/tenants/${tenantId}/quotas`, "PATCH", { sessionRetentionDays: 30 })).status).toBe(200);
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE sessions SET last_active_at = ? WHERE session_id = ?", Date.now() - 31 * DAY_MS, "reused");
    });
    await runInDurableObject(env.TENANTS.getByName("admin:directory"), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE tenant_directory SET retention_swept_at = 0 WHERE tenant_id = ?", tenantId);
    });

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
