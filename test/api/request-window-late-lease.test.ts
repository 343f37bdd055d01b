import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../durable-objects/tenant/tenant-object.ts";
import { LEASE_MAX, WINDOW_MS, windowStartOf } from "../../durable-objects/tenant/quota-leases.ts";
import { adminToken, call, newTenant } from "./helpers.ts";

// "The tenant never gets more than its quota in a minute" (docs/api-tenants.md): a lease asked
// with a clock a little behind (a session object's, or a call sent just before the minute's end)
// counts in the tenant's current minute; the window never moves back and forgets that count.

async function quotaTenant(prefix: string, requestsPerMinute: number) {
  const { tenantId, key } = await newTenant(prefix);
  expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute }, token: adminToken() })).status).toBe(200);
  return { tenantId, hash: await sha256Hex(key), minute: windowStartOf(Date.now()) + 2 * WINDOW_MS };
}

describe("request window at a minute boundary", () => {
  it("a lease asked for the previous minute (a holder's clock slightly behind) does not reset the current minute's count", async () => {
    const { tenantId, hash, minute } = await quotaTenant("rw_late", 100);
    const tenant = env.TENANTS.getByName(tenantId);
    // The current minute's quota is used up.
    let admitted = 0;
    for (;;) {
      const verdict = await tenant.authorizeLease(hash, LEASE_MAX, minute + 1_000);
      if (!verdict) throw new Error("the key must verify");
      if (verdict.limited) break;
      admitted += verdict.granted;
    }
    expect(admitted).toBe(100);
    // A session object whose clock is half a second behind refills its lease at the boundary.
    const late = await tenant.authorizeLease(hash, LEASE_MAX, minute - 500);
    expect(late).not.toBeNull();
    // Back in the current minute: still used up, whatever the late request got.
    let after = 0;
    for (let i = 0; i < 50; i++) {
      const verdict = await tenant.authorizeLease(hash, LEASE_MAX, minute + 2_000);
      if (!verdict || verdict.limited) break;
      after += verdict.granted;
    }
    expect(after).toBe(0);
  });
});
