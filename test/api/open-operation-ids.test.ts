import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { TENANT_MIGRATIONS } from "../../durable-objects/tenant/tenant-migrations.ts";
import { rerunMigration } from "../helpers/storage.ts";
import { adminToken, call, newTenant } from "./helpers.ts";

// The open-operations ledger counts an operation per session: an operation id only has to be new
// within its session, so two sessions may run operations under the same (client-chosen) id, and
// each takes its own slot of maxOpenOperations and frees only its own.

let counter = 0;

async function slowSession(key: string): Promise<string> {
  const sid = `s_opids_${(counter++).toString(36)}`;
  expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
  const lane = `/v1/sessions/${sid}/lanes/main`;
  expect((await call(lane, { method: "PUT", token: key })).status).toBe(201);
  const text = Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ");
  expect((await call(`/v1/sessions/${sid}/lists/scripted/steps`, { body: { text, chunkMs: 50 }, token: key })).status).toBe(201);
  expect((await call(`${lane}/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: key })).status).toBe(200);
  return lane;
}

async function accept(key: string, lane: string, operationId?: string): Promise<Response> {
  return call(`${lane}/operations`, { body: { kind: "prompt", prompt: "work", ...(operationId !== undefined && { operationId }) }, token: key });
}

describe("operation ids shared by sessions", () => {
  it("two sessions running the same operation id hold two slots, and one settling frees only its own", async () => {
    const { tenantId, key } = await newTenant("opids");
    expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 2 }, token: adminToken() })).status).toBe(200);
    const [first, second, third] = [await slowSession(key), await slowSession(key), await slowSession(key)];
    const shared = uuidv7Ids.next();

    expect((await accept(key, first, shared)).status).toBe(202);
    expect((await accept(key, second, shared)).status).toBe(202);
    expect(await env.TENANTS.getByName(tenantId).openOperationCount()).toBe(2);
    // Both slots are taken: a third operation is refused.
    expect((await accept(key, third)).status).toBe(429);

    // The first is aborted and frees its slot; the second still runs and still holds its own.
    expect((await call(`${first}/operations/${shared}/abort`, { method: "POST", token: key })).status).toBeLessThan(300);
    expect(await (await call(`${first}/operations/${shared}?wait=30`, { token: key })).json()).toMatchObject({ state: "settled" });
    let open = await env.TENANTS.getByName(tenantId).openOperationCount();
    for (let i = 0; i < 200 && open > 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      open = await env.TENANTS.getByName(tenantId).openOperationCount();
    }
    expect(open).toBe(1);
    expect(await (await call(`${second}/operations/${shared}`, { token: key })).json()).toMatchObject({ state: "active" });
    // One slot is free again, and only one.
    expect((await accept(key, third, shared)).status).toBe(202);
    expect((await accept(key, first)).status).toBe(429);
    for (const lane of [second, third]) expect((await call(`${lane}/operations/${shared}/abort`, { method: "POST", token: key })).status).toBeLessThan(300);
  });

  it("the migration to per-session keys keeps the ledger's rows", async () => {
    const { tenantId } = await newTenant("opidsmig");
    const tenant = env.TENANTS.getByName(tenantId);
    const shared = uuidv7Ids.next();
    const rows = await runInDurableObject(tenant, (_instance: TenantObject, state) => {
      const insert = "INSERT INTO open_operations (session_id, operation_id, lane, reserved_at, bound) VALUES (?, ?, 'main', ?, 1)";
      state.storage.sql.exec(insert, "s_a", shared, Date.now());
      state.storage.sql.exec(insert, "s_b", shared, Date.now());
      rerunMigration(state.storage, TENANT_MIGRATIONS, "open_operations_per_session");
      return state.storage.sql.exec<{ session_id: string }>("SELECT session_id FROM open_operations ORDER BY session_id").toArray().map((row) => row.session_id);
    });
    expect(rows).toEqual(["s_a", "s_b"]);
    expect(await tenant.openOperationCount()).toBe(2);
    await tenant.releaseOperation("s_b", shared);
    expect(await tenant.openOperationCount()).toBe(1);
  });
});
