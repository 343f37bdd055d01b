import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { sha256Hex, type TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { LAST_USED_GRANULARITY_MS } from "../../durable-objects/tenant/tenant-keys.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { expectError, objectOf } from "./session-helpers.ts";

// The admin's listings (tenants; a tenant's keys, never secrets) and the tenant's session listing,
// which reads the tenant's index only.

type Page<T> = { items: T[]; nextCursor: string | null };
type KeyRow = { keyId: string; name: string; createdAt: number; lastUsedAt?: number; revokedAt?: number };

async function adminGet<T>(path: string): Promise<T> {
  const response = await call(path, { token: adminToken() });
  expect(response.status).toBe(200);
  return response.json<T>();
}

describe("GET /v1/admin/tenants", () => {
  it("lists created tenants in creation order, page by page", async () => {
    const ids = [`dir_a_${Date.now()}`, `dir_b_${Date.now()}`, `dir_c_${Date.now()}`];
    for (const id of ids) expect((await call("/v1/admin/tenants", { body: { id, name: `Tenant ${id}` }, token: adminToken() })).status).toBe(201);
    const seen: { id: string; name: string; createdAt: number }[] = [];
    let cursor: string | null = null;
    do {
      const page: Page<{ id: string; name: string; createdAt: number }> = await adminGet(`/v1/admin/tenants?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== null);
    const mine = seen.filter((tenant) => ids.includes(tenant.id));
    expect(mine).toEqual(ids.map((id) => ({ id, name: `Tenant ${id}`, createdAt: expect.any(Number) })));
  });

  it("is admin only, and refuses a bad cursor or limit with 400", async () => {
    const { key } = await newTenant("dirauth");
    await expectError(await call("/v1/admin/tenants", { token: key }), 401, "Unauthenticated");
    await expectError(await call("/v1/admin/tenants?cursor=nope", { token: adminToken() }), 400, "ValidationFailed");
    await expectError(await call("/v1/admin/tenants?limit=0", { token: adminToken() }), 400, "ValidationFailed");
  });

  it("a tenant whose creation stopped before the directory is listed once its creation is retried", async () => {
    const id = `dir_heal_${Date.now()}`;
    // What a failure between the tenant object and the directory leaves: the tenant, unlisted.
    await env.TENANTS.getByName(id).createTenant(id, "Healed");
    const retried = await call("/v1/admin/tenants", { body: { id }, token: adminToken() });
    await expectError(retried, 409, "TenantExists");
    const all: Page<{ id: string }> = await adminGet("/v1/admin/tenants?limit=1000");
    expect(all.items.filter((tenant) => tenant.id === id)).toEqual([{ id, name: "Healed", createdAt: expect.any(Number) }]);
  });
});

describe("GET /v1/admin/tenants/{tenantId}/keys", () => {
  it("lists ids, names, creation, last use and revocation; never a secret", async () => {
    const { tenantId, key, keyId } = await newTenant("keylist");
    const second = await (await call(`/v1/admin/tenants/${tenantId}/keys`, { body: { name: "second" }, token: adminToken() })).json<{ keyId: string; key: string }>();
    expect((await call("/v1/me", { token: key })).status).toBe(200);
    expect((await call(`/v1/admin/tenants/${tenantId}/keys/${second.keyId}`, { method: "DELETE", token: adminToken() })).status).toBe(204);

    const response = await call(`/v1/admin/tenants/${tenantId}/keys`, { token: adminToken() });
    const text = await response.text();
    expect(text).not.toContain(key);
    expect(text).not.toContain(second.key);
    expect(text).not.toMatch(/hash/);
    const page: Page<KeyRow> = JSON.parse(text);
    expect(page).toEqual({
      items: [
        { keyId, name: "test", createdAt: expect.any(Number), lastUsedAt: expect.any(Number) },
        { keyId: second.keyId, name: "second", createdAt: expect.any(Number), revokedAt: expect.any(Number) },
      ],
      nextCursor: null,
    });
  });

  it("records the last use at most once a minute per key (no write per request)", async () => {
    const { tenantId, key, keyId } = await newTenant("lastused");
    expect((await call("/v1/me", { token: key })).status).toBe(200);
    const lastUsed = async () => (await adminGet<Page<KeyRow>>(`/v1/admin/tenants/${tenantId}/keys`)).items.find((row) => row.keyId === keyId)?.lastUsedAt;
    const first = await lastUsed();
    expect(first).toEqual(expect.any(Number));
    for (let i = 0; i < 3; i++) expect((await call("/v1/me", { token: key })).status).toBe(200);
    expect(await lastUsed()).toBe(first);
    // A minute later (the stored time moved back), the key's next verification records again (a
    // warm isolate verifies a key in use every KEY_TRUST_MS, not per request: asked directly here).
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE api_keys SET last_used_at = last_used_at - ? WHERE key_id = ?", LAST_USED_GRANULARITY_MS, keyId);
    });
    expect(await env.TENANTS.getByName(tenantId).authorizeLease(await sha256Hex(key), 0)).toMatchObject({ keyId });
    expect(await lastUsed()).toBeGreaterThanOrEqual(first ?? 0);
    expect(await lastUsed()).not.toBe((first ?? 0) - LAST_USED_GRANULARITY_MS);
  });

  it("is 404 for an unknown tenant (creating nothing) and 401 without the admin token", async () => {
    const ghost = `ghost_keys_${Date.now()}`;
    await expectError(await call(`/v1/admin/tenants/${ghost}/keys`, { token: adminToken() }), 404, "NotFound");
    const tables = await runInDurableObject(env.TENANTS.getByName(ghost), (_instance: TenantObject, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'schema_migrations'").toArray(),
    );
    expect(tables).toEqual([]);
    await expectError(await call(`/v1/admin/tenants/${ghost}/keys`), 401, "Unauthenticated");
  });
});

describe("GET /v1/sessions reads the tenant's index only", () => {
  it("rows are { id, name, createdAt, metadata }; a rename appears at once; a deletion removes the row", async () => {
    const { key } = await newTenant("listing");
    expect((await call("/v1/sessions", { body: { id: "one", name: "first" }, token: key })).status).toBe(201);
    expect((await call("/v1/sessions", { body: { id: "two" }, token: key })).status).toBe(201);
    const list = async () => (await call("/v1/sessions", { token: key })).json<Page<Record<string, unknown>>>();
    expect(await list()).toEqual({
      items: [
        { id: "one", name: "first", createdAt: expect.any(Number), metadata: {} },
        { id: "two", name: null, createdAt: expect.any(Number), metadata: {} },
      ],
      nextCursor: null,
    });
    expect((await call("/v1/sessions/two", { method: "PATCH", body: { name: "renamed" }, token: key })).status).toBe(200);
    expect((await call("/v1/sessions/one", { method: "PATCH", body: { name: null }, token: key })).status).toBe(200);
    expect((await list()).items.map((row) => row.name)).toEqual([null, "renamed"]);
    expect((await call("/v1/sessions/one", { method: "DELETE", token: key })).status).toBe(204);
    expect((await list()).items.map((row) => row.id)).toEqual(["two"]);
  });

  it("lists a session whose object would fail: the listing never wakes a session", async () => {
    const { tenantId, key } = await newTenant("nofanout");
    expect((await call("/v1/sessions", { body: { id: "broken", name: "still listed" }, token: key })).status).toBe(201);
    // Break the session object behind the index's back: its metadata row is gone, and the
    // restarted object finds no session (a listing that asked it would get SessionNotFound).
    await runInDurableObject(objectOf(tenantId, "broken"), (_instance: SessionObject, state) => {
      state.storage.sql.exec("DELETE FROM meta");
    });
    await abortAllDurableObjects();
    await expectError(await call("/v1/sessions/broken", { token: key }), 404, "SessionNotFound");
    const listed = await call("/v1/sessions", { token: key });
    expect(listed.status).toBe(200);
    expect((await listed.json<Page<{ id: string; name: string | null }>>()).items).toEqual([{ id: "broken", name: "still listed", createdAt: expect.any(Number), metadata: {} }]);
  });
});
