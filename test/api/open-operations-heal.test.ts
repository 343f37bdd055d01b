import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { HEAL_INTERVAL_MS, LISTED_OPEN_OPERATIONS } from "../../durable-objects/tenant/tenant-operations.ts";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import { adminToken, call, newTenant } from "./helpers.ts";

// A refused open-operation reservation may make the worker ask sessions whether their operations
// are still open (healing lost releases). That healing is bounded (a few sessions) and rare (once
// per interval per tenant): a tenant at its quota costs one call to its object per refusal.

describe("healing lost releases is bounded and rare", () => {
  it("a refusal lists at most a few operations, and refusals within the interval list none", async () => {
    const { tenantId } = await newTenant("heal");
    const quota = 40;
    expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: quota }, token: adminToken() })).status).toBe(200);
    const tenant = env.TENANTS.getByName(tenantId);
    const now = Date.now();
    for (let i = 0; i < quota; i++) {
      const reserved = await tenant.reserveOperation(`s_${i}`, "main", now);
      if (!reserved.ok) throw new Error("within the quota");
      await tenant.bindOperation(reserved.reservationId, uuidv7Ids.next());
    }
    const first = await tenant.reserveOperation("s_x", "main", now);
    expect(first.ok).toBe(false);
    expect(first.ok ? [] : first.openOperations).toHaveLength(LISTED_OPEN_OPERATIONS);
    expect(LISTED_OPEN_OPERATIONS).toBeLessThanOrEqual(10);
    const soon = await tenant.reserveOperation("s_x", "main", now + HEAL_INTERVAL_MS - 1);
    expect(soon).toEqual({ ok: false, openOperations: [] });
    const later = await tenant.reserveOperation("s_x", "main", now + HEAL_INTERVAL_MS);
    expect(later.ok ? [] : later.openOperations).toHaveLength(LISTED_OPEN_OPERATIONS);
  });
});
