import { describe, expect, it } from "vitest";
import { adminToken, call, errorCode, newTenant } from "./helpers.ts";

// Idempotency-Key on creating POSTs (ARCHITECTURE D15; QUALITY R5).

describe("Idempotency-Key", () => {
  it("replays the same response for the same key and body, with one effect", async () => {
    const { key } = await newTenant("idem");
    const request = { body: { name: "once" }, token: key, headers: { "idempotency-key": "create-1" } };
    const first = await call("/v1/sessions", request);
    const second = await call("/v1/sessions", request);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get("idempotency-replayed")).toBe("true");
    const [a, b] = [await first.json<{ id: string }>(), await second.json<{ id: string }>()];
    expect(b).toEqual(a);
    const listed = await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>();
    expect(listed.items.map((s) => s.id)).toEqual([a.id]);
  });

  it("answers 422 for the same key with a different body, writing nothing", async () => {
    const { key } = await newTenant("idem2");
    const first = await call("/v1/sessions", { body: { name: "a" }, token: key, headers: { "idempotency-key": "k" } });
    expect(first.status).toBe(201);
    const other = await call("/v1/sessions", { body: { name: "b" }, token: key, headers: { "idempotency-key": "k" } });
    expect(other.status).toBe(422);
    expect(await errorCode(other)).toBe("IdempotencyConflict");
    const listed = await (await call("/v1/sessions", { token: key })).json<{ items: unknown[] }>();
    expect(listed.items).toHaveLength(1);
  });

  it("keys are per tenant, and a rejected request is replayed as rejected", async () => {
    const alice = await newTenant("idem3");
    const bob = await newTenant("idem4");
    const headers = { "idempotency-key": "shared" };
    expect((await call("/v1/sessions", { body: { id: "same" }, token: alice.key, headers })).status).toBe(201);
    expect((await call("/v1/sessions", { body: { id: "same" }, token: bob.key, headers })).status).toBe(201);
    const invalid = { body: { id: "bad id" }, token: alice.key, headers: { "idempotency-key": "bad" } };
    expect((await call("/v1/sessions", invalid)).status).toBe(400);
    expect((await call("/v1/sessions", invalid)).status).toBe(400);
    expect((await call("/v1/sessions", { body: {}, token: alice.key, headers: { "idempotency-key": "" } })).status).toBe(400);
  });

  it("covers the admin creating POSTs", async () => {
    const headers = { "idempotency-key": `tenant-${Date.now()}` };
    const first = await call("/v1/admin/tenants", { body: {}, token: adminToken(), headers });
    const second = await call("/v1/admin/tenants", { body: {}, token: adminToken(), headers });
    expect(first.status).toBe(201);
    expect(await second.json()).toEqual(await first.json());
  });
});
