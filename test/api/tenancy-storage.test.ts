import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { call, errorCode, newTenant, untilRefused } from "./helpers.ts";
import { expectError } from "./session-helpers.ts";

// Traffic that proves nothing creates no storage (each object that writes is billed for ever), and
// failed authentications are limited before any tenant object is touched.

let counter = 0;
const unique = (prefix: string): string => `${prefix}_${Date.now().toString(36)}_${(counter++).toString(36)}`;
const secret = (): string => Array.from({ length: 43 }, () => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[Math.floor(Math.random() * 64)]).join("");
const garbageKey = (tenantId: string): string => `sk_${tenantId}_${secret()}`;

/** The tables an object holds (none for an object that never stored anything). */
function tablesOf(stub: DurableObjectStub<TenantObject> | DurableObjectStub<SessionObject>): Promise<string[]> {
  return runInDurableObject(stub, (_instance: TenantObject | SessionObject, state) =>
    state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'")
      .toArray()
      .map((row) => row.name),
  );
}

describe("no storage for traffic that proves nothing", () => {
  it("a garbage key naming a tenant that does not exist is 401 and creates no tenant storage", async () => {
    const victim = unique("ghost");
    await expectError(await call("/v1/me", { token: garbageKey(victim) }), 401, "Unauthenticated");
    await expectError(await call("/v1/sessions", { token: garbageKey(victim) }), 401, "Unauthenticated");
    expect(await tablesOf(env.TENANTS.getByName(victim))).toEqual([]);
  });

  it("a garbage key for a real tenant is 401 and writes nothing to it", async () => {
    const { tenantId, key } = await newTenant("garbled");
    const before = await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => state.storage.sql.databaseSize);
    for (let i = 0; i < 5; i++) await expectError(await call("/v1/me", { token: garbageKey(tenantId) }), 401, "Unauthenticated");
    const after = await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => ({
      size: state.storage.sql.databaseSize,
      window: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM request_window").one().n,
    }));
    expect(after).toEqual({ size: before, window: 0 });
    expect((await call("/v1/me", { token: key })).status).toBe(200);
  });

  it("reads, idempotent POSTs and DELETEs of an unknown session are 404 and create no session storage", async () => {
    const { tenantId, key } = await newTenant("unknownsid");
    const sid = unique("nobody");
    const base = `/v1/sessions/${sid}`;
    for (const path of [base, `${base}/entries`, `${base}/branches`, `${base}/usage`, `${base}/values/app/k`, `${base}/lists/app/k`, `${base}/lanes`]) {
      await expectError(await call(path, { token: key }), 404, "SessionNotFound");
    }
    await expectError(await call(`${base}/branches`, { body: { name: "b" }, token: key, headers: { "idempotency-key": "k1" } }), 404, "SessionNotFound");
    await expectError(await call(base, { method: "DELETE", token: key }), 404, "SessionNotFound");
    expect(await tablesOf(env.SESSIONS.getByName(`${tenantId}:${sid}`))).toEqual([]);
  });

  it("a session's storage is created by its creation, and deleting it leaves none", async () => {
    const { tenantId, key } = await newTenant("lifecycle");
    const sid = unique("made");
    expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    expect(await tablesOf(env.SESSIONS.getByName(`${tenantId}:${sid}`))).toContain("meta");
    expect((await call(`/v1/sessions/${sid}`, { method: "DELETE", token: key })).status).toBe(204);
    expect(await tablesOf(env.SESSIONS.getByName(`${tenantId}:${sid}`))).toEqual([]);
  });
});

describe("failed authentications are limited before any object is touched", () => {
  it("per source: past the limit a source's unproven keys are 429 with Retry-After; a proven key still works", async () => {
    const { key } = await newTenant("srclimit");
    const source = `198.51.100.${Math.floor(Math.random() * 250)}`;
    const headers = { "cf-connecting-ip": source };
    // The tenant's own key authenticates once first: proven in this isolate.
    expect((await call("/v1/me", { token: key, headers })).status).toBe(200);
    const { before, refused } = await untilRefused(() => call("/v1/me", { token: garbageKey(unique("anyone")), headers }), 130);
    expect(before.length).toBeGreaterThanOrEqual(59);
    expect(before.every((status) => status === 401)).toBe(true);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(await errorCode(refused)).toBe("RateLimited");
    expect((await call("/v1/me", { token: key, headers })).status).toBe(200);
    // Another source is not affected.
    await expectError(await call("/v1/me", { token: garbageKey(unique("anyone")), headers: { "cf-connecting-ip": "203.0.113.9" } }), 401, "Unauthenticated");
  });

  it("per tenant: past the limit garbage keys for one tenant are 429; its proven key still works", async () => {
    const { tenantId, key } = await newTenant("tenlimit");
    expect((await call("/v1/me", { token: key })).status).toBe(200);
    const { before, refused } = await untilRefused(() => call("/v1/me", { token: garbageKey(tenantId) }), 620);
    expect(before.length).toBeGreaterThanOrEqual(299);
    expect(before.every((status) => status === 401)).toBe(true);
    expect(await errorCode(refused)).toBe("RateLimited");
    expect((await call("/v1/me", { token: key })).status).toBe(200);
    // Presented as the admin token, the key is refused there, and still proven for its tenant.
    expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { token: key })).status).toBe(401);
    expect((await call("/v1/me", { token: key })).status).toBe(200);
    // Another tenant is not affected.
    const other = await newTenant("tenother");
    await expectError(await call("/v1/me", { token: garbageKey(other.tenantId) }), 401, "Unauthenticated");
  }, 30_000);
});
