import { describe, expect, it } from "vitest";
import { adminToken, call, errorCode, newTenant } from "./helpers.ts";

// Tenancy and security (ARCHITECTURE D2, D17; QUALITY R4) through the real Hono app.

describe("admin routes", () => {
  it("create a tenant and a key shown once; the key authenticates /v1/me", async () => {
    const created = await call("/v1/admin/tenants", { body: { id: "acme_admin_1", name: "Acme" }, token: adminToken() });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ id: "acme_admin_1", name: "Acme", createdAt: expect.any(Number) });
    const again = await call("/v1/admin/tenants", { body: { id: "acme_admin_1" }, token: adminToken() });
    expect(again.status).toBe(409);
    expect(await errorCode(again)).toBe("TenantExists");
    const keyResponse = await call("/v1/admin/tenants/acme_admin_1/keys", { body: {}, token: adminToken() });
    expect(keyResponse.status).toBe(201);
    const { key, keyId } = await keyResponse.json<{ key: string; keyId: string }>();
    expect(key).toMatch(/^sk_acme_admin_1_[A-Za-z0-9_-]{43}$/);
    const me = await call("/v1/me", { token: key });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ tenantId: "acme_admin_1", keyId, defaultModel: null, usage: expect.objectContaining({ totalTokens: 0 }) });
  });

  it("refuse a missing or wrong admin token with 401, and bad bodies with 400", async () => {
    expect((await call("/v1/admin/tenants", { body: {} })).status).toBe(401);
    expect((await call("/v1/admin/tenants", { body: {}, token: "nope" })).status).toBe(401);
    const bad = await call("/v1/admin/tenants", { body: { id: "has:colon" }, token: adminToken() });
    expect(bad.status).toBe(400);
    expect(await errorCode(bad)).toBe("ValidationFailed");
    const malformed = await call("/v1/admin/tenants", { rawBody: "{nope", token: adminToken() });
    expect(await errorCode(malformed)).toBe("ValidationFailed");
    const unknown = await call("/v1/admin/tenants/nobody_here/keys", { body: {}, token: adminToken() });
    expect(unknown.status).toBe(404);
  });

  it("revoke a key, effective on the next request", async () => {
    const { tenantId, key, keyId } = await newTenant("revoke");
    expect((await call("/v1/me", { token: key })).status).toBe(200);
    const revoked = await call(`/v1/admin/tenants/${tenantId}/keys/${keyId}`, { method: "DELETE", token: adminToken() });
    expect(revoked.status).toBe(204);
    const after = await call("/v1/me", { token: key });
    expect(after.status).toBe(401);
    expect(await errorCode(after)).toBe("Unauthenticated");
  });
});

describe("tenant authentication", () => {
  it("answers 401 for missing, garbled and unknown keys, with a request id", async () => {
    const { tenantId, key } = await newTenant("auth");
    const cases = [
      await call("/v1/me"),
      await call("/v1/me", { token: "garbage" }),
      await call("/v1/me", { token: `sk_${tenantId}_${"A".repeat(43)}` }),
      await call("/v1/me", { token: `${key}x` }),
      await call("/v1/me", { headers: { authorization: `Basic ${key}` } }),
    ];
    for (const response of cases) {
      expect(response.status).toBe(401);
      const body = await response.json<{ error: { code: string; requestId: string } }>();
      expect(body.error.code).toBe("Unauthenticated");
      expect(body.error.requestId).toEqual(expect.any(String));
    }
  });

  it("lists the model catalog with the scripted models", async () => {
    const { key } = await newTenant("models");
    const response = await call("/v1/models", { token: key });
    expect(response.status).toBe(200);
    const models = await response.json<{ provider: string; modelId: string }[]>();
    expect(models.map((m) => `${m.provider}/${m.modelId}`)).toEqual(expect.arrayContaining(["scripted/echo", "scripted/script"]));
  });
});

describe("sessions", () => {
  it("create, list with a cursor, and get; other tenants' sessions are 404", async () => {
    const alice = await newTenant("alice");
    const bob = await newTenant("bob");
    const created = await Promise.all(
      ["one", "two", "three"].map((id) => call("/v1/sessions", { body: { id, name: `session ${id}` }, token: alice.key })),
    );
    expect(created.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(await created[0]?.json()).toMatchObject({ id: "one", name: "session one", branches: [], stats: { messageCount: 0 } });
    const duplicate = await call("/v1/sessions", { body: { id: "one" }, token: alice.key });
    expect(duplicate.status).toBe(409);
    const page1 = await (await call("/v1/sessions?limit=2", { token: alice.key })).json<{ items: { id: string }[]; nextCursor: string | null }>();
    expect(page1.items).toHaveLength(2);
    expect(page1.nextCursor).toEqual(expect.any(String));
    const page2 = await (await call(`/v1/sessions?limit=2&cursor=${page1.nextCursor}`, { token: alice.key })).json<{ items: { id: string }[]; nextCursor: string | null }>();
    expect([...page1.items, ...page2.items].map((s) => s.id).sort()).toEqual(["one", "three", "two"]);
    expect(page2.nextCursor).toBeNull();
    expect((await call("/v1/sessions/one", { token: alice.key })).status).toBe(200);
    const foreign = await call("/v1/sessions/one", { token: bob.key });
    expect(foreign.status).toBe(404);
    expect(await errorCode(foreign)).toBe("SessionNotFound");
    expect((await (await call("/v1/sessions", { token: bob.key })).json<{ items: unknown[] }>()).items).toEqual([]);
  });

  it("applies initial settings and refuses invalid ids and bodies", async () => {
    const { key } = await newTenant("settings");
    const created = await call("/v1/sessions", { body: { id: "cfg", settings: { steeringMode: "one-at-a-time" } }, token: key });
    expect(created.status).toBe(201);
    const invalid = [
      await call("/v1/sessions", { body: { id: "bad id" }, token: key }),
      await call("/v1/sessions", { body: { settings: { steeringMode: "sometimes" } }, token: key }),
      await call("/v1/sessions", { body: { unknown: 1 }, token: key }),
      await call("/v1/sessions/has:colon", { token: key }),
      await call("/v1/sessions?limit=0", { token: key }),
      await call("/v1/sessions?cursor=%%%", { token: key }),
    ];
    expect(invalid.map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400]);
    const huge = await call("/v1/sessions", { rawBody: JSON.stringify({ name: "x".repeat(2 * 1024 * 1024) }), token: key });
    expect(huge.status).toBe(413);
    // valibot's object schemas accept arrays; the edge refuses an array wherever an object belongs.
    const arrays = [
      await call("/v1/sessions", { body: [], token: key }),
      await call("/v1/sessions", { body: { settings: [1] }, token: key }),
      await call("/v1/admin/tenants", { body: [], token: adminToken() }),
    ];
    expect(arrays.map((r) => r.status)).toEqual([400, 400, 400]);
  });
});

describe("CORS", () => {
  it("answers a preflight for the configured origins and exposes the request id", async () => {
    const preflight = await call("/v1/sessions", {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example");
    // Every request header the API documents: the idempotency key, a client's own request id, and
    // the SSE resume header a page's fetch-based reader sends.
    const allowed = (preflight.headers.get("access-control-allow-headers") ?? "").split(",");
    expect(allowed).toEqual(expect.arrayContaining(["idempotency-key", "x-request-id", "last-event-id"]));
    const { key } = await newTenant("cors");
    const me = await call("/v1/me", { token: key, headers: { origin: "https://app.example" } });
    expect(me.headers.get("access-control-expose-headers")).toContain("x-request-id");
  });
});

describe("quotas", () => {
  it("answers 429 RateLimited with Retry-After once a tenant's requests per minute are used up", async () => {
    const { tenantId, key } = await newTenant("quota");
    const set = await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 3 }, token: adminToken() });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ requestsPerMinute: 3, maxOpenOperations: 50, maxSchedules: 1_000, deploymentKeys: true, sessionRetentionDays: null });
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 5; i++) {
      const response = await call("/v1/me", { token: key });
      statuses.push(response.status);
      if (response.status === 429) limited = response;
    }
    // A minute boundary may fall inside the loop; the quota still holds within every window.
    expect(statuses.filter((status) => status === 200).length).toBeLessThanOrEqual(6);
    expect(statuses).toContain(429);
    expect(limited?.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await errorCode(limited ?? new Response("{}"))).toBe("RateLimited");
    expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { token: adminToken() })).status).toBe(200);
    expect((await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 0 }, token: adminToken() })).status).toBe(400);
  });
});
