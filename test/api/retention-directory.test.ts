import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { tick } from "./deferred-helpers.ts";
import { adminToken, call } from "./helpers.ts";
import { expectError } from "./session-helpers.ts";

// A tenant's `sessionRetentionDays` (docs/api-tenants.md, docs/data.md "Retention") is kept twice:
// by the tenant's object, and by the admin directory the cron sweeps from (directory-lifecycle.ts).
// A tenant missing from the directory (a creation that stopped before it) is listed with its
// retention when the operator sets one or repeats the creation.

const DAY_MS = 86_400_000;

describe("a retention the operator set is swept", { timeout: 60_000 }, () => {
  it("a tenant whose creation stopped before the directory, healed as documented, has its retention swept", async () => {
    const tenantId = `radm_ret_${Date.now().toString(36)}`;
    // What a failure between the tenant's object and the directory leaves (as admin-listing.test.ts
    // simulates it): the tenant exists, unlisted.
    await env.TENANTS.getByName(tenantId).createTenant(tenantId, "Partly created");
    const key = await (await call(`/v1/admin/tenants/${tenantId}/keys`, { body: {}, token: adminToken() })).json<{ key: string }>();

    // The operator sets a retention: 200, and the quotas show it.
    const patched = await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { sessionRetentionDays: 30 }, token: adminToken() });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({ sessionRetentionDays: 30 });
    // …and repeats the creation, which "answers 409 TenantExists and lists it" (docs/api-tenants.md).
    await expectError(await call("/v1/admin/tenants", { body: { id: tenantId }, token: adminToken() }), 409, "TenantExists");
    expect((await (await call(`/v1/admin/tenants/${tenantId}/quotas`, { token: adminToken() })).json<{ sessionRetentionDays: number }>()).sessionRetentionDays).toBe(30);

    // A session idle for 31 days (the one value the sweep reads, moved back as session-retention.test.ts does).
    expect((await call("/v1/sessions", { body: { id: "idle" }, token: key.key })).status).toBe(201);
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE sessions SET last_active_at = ? WHERE session_id = 'idle'", Date.now() - 31 * DAY_MS);
    });

    await tick();
    // "sessions idle that long … are deleted by the minute cron": the tenant's retention is 30 days.
    expect((await call("/v1/sessions/idle", { token: key.key })).status).toBe(404);
  });
});
