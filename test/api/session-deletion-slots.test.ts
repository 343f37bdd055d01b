import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { fromWire } from "../../schema/wire.ts";
import { call } from "./helpers.ts";
import { suspendedRun } from "./deferred-helpers.ts";

// Deleting a session whose operation is still open (here a deferred run, suspended: it holds its
// open-operation slot until it settles) frees that slot at the tenant: the deleted session never
// settles it. Before, the tenant's ledger kept the row: the slot stayed counted against
// maxOpenOperations, and a session created again under the id (docs/api-sessions.md "Deletion":
// "the session created under it is a new one") was listed `status=active` with no operation open.

async function listedIds(key: string, status: "active" | "idle"): Promise<string[]> {
  const response = await call(`/v1/sessions?status=${status}&limit=100`, { token: key });
  expect(response.status).toBe(200);
  return (await response.json<{ items: { id: string }[] }>()).items.map((item) => item.id);
}

describe("a deleted session's open operation", () => {
  it("deleting a session with a suspended run frees its slot; the session created again under its id is idle", { timeout: 60_000 }, async () => {
    const run = await suspendedRun("delslot");
    // The suspended run holds the tenant's slot (bound by the accepting request).
    await expect.poll(() => env.TENANTS.getByName(run.tenantId).openOperationCount()).toBe(1);
    expect(await listedIds(run.key, "active")).toContain(run.sid);

    expect((await call(run.sessionPath, { method: "DELETE", token: run.key })).status).toBe(204);
    expect((await call("/v1/sessions", { body: { id: run.sid }, token: run.key })).status).toBe(201);
    // The new session has no lane and no operation: idle (polled: no lag of any forward explains
    // a difference after 10 s).
    await expect.poll(() => listedIds(run.key, "active")).not.toContain(run.sid);
    expect(await listedIds(run.key, "idle")).toContain(run.sid);
    // And the tenant counts no open operation any more.
    expect(await env.TENANTS.getByName(run.tenantId).openOperationCount()).toBe(0);
  });
});

describe("a session created again before its predecessor's deletion finished", () => {
  it("takes nothing of the deleted session's open operations: the tenant frees their slots at its registration", { timeout: 60_000 }, async () => {
    const run = await suspendedRun("delslot_re");
    await expect.poll(() => env.TENANTS.getByName(run.tenantId).openOperationCount()).toBe(1);
    // The deletion's first step only (the object), as a background batch or a DELETE takes it.
    const deleted = fromWire(await env.SESSIONS.getByName(`${run.tenantId}:${run.sid}`).deleteSession());
    expect(deleted).toMatchObject({ ok: true, value: { deleted: true } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await call("/v1/sessions", { body: { id: run.sid }, token: run.key })).status).toBe(201);
    expect(await env.TENANTS.getByName(run.tenantId).openOperationCount()).toBe(0);
    expect(await listedIds(run.key, "idle")).toContain(run.sid);
  });
});

describe("a session the tenant never indexed (its registration failed)", () => {
  it("has the slots of its open operations freed by its deletion all the same", { timeout: 60_000 }, async () => {
    const run = await suspendedRun("delslot_unindexed");
    await expect.poll(() => env.TENANTS.getByName(run.tenantId).openOperationCount()).toBe(1);
    await runInDurableObject(env.TENANTS.getByName(run.tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("DELETE FROM sessions WHERE session_id = ?", run.sid);
    });
    expect((await call(run.sessionPath, { method: "DELETE", token: run.key })).status).toBe(204);
    expect(await env.TENANTS.getByName(run.tenantId).openOperationCount()).toBe(0);
  });
});
