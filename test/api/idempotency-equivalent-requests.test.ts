import { describe, expect, it } from "vitest";
import { call, newTenant } from "./helpers.ts";

// Idempotency-Key semantics on creating POSTs (docs/api-tenants.md
// "Idempotency-Key"): "The same key with the same body (compared as JSON, so formatting does not
// matter) replays the remembered answer", and "A key belongs to one tenant and one route (method
// and path)".

describe("Idempotency-Key on equivalent requests", () => {
  it("a repeat whose body is the same JSON with its members in another order replays, not 422", async () => {
    const { key } = await newTenant("rv_idem_order");
    const headers = { "idempotency-key": "order-1", "content-type": "application/json" };
    const first = await call("/v1/sessions", { token: key, rawBody: '{"name":"n","metadata":{"a":"1","b":"2"}}', headers });
    expect(first.status).toBe(201);
    // The same JSON value: object members are unordered (RFC 8259 §4), as a client serializing a map may send them.
    const repeat = await call("/v1/sessions", { token: key, rawBody: '{"metadata":{"b":"2","a":"1"},"name":"n"}', headers });
    const text = await repeat.text();
    expect({ status: repeat.status, replayed: repeat.headers.get("idempotency-replayed") }, text).toEqual({ status: 201, replayed: "true" });
    expect(JSON.parse(text)).toEqual(await first.json());
  });

  it("the same key on the same route, its path percent-encoded differently, makes one effect", async () => {
    const { key } = await newTenant("rv_idem_path");
    expect((await call("/v1/sessions", { token: key, body: { id: "s1" } })).status).toBe(201);
    const headers = { "idempotency-key": "append-1" };
    const first = await call("/v1/sessions/s1/lists/ns/k", { token: key, body: { x: 1 }, headers });
    expect(first.status).toBe(201);
    // `%6B` is `k` and `%73` is `s`: RFC 3986 §6.2.2.2, the same path, the same list (the route decodes both to it).
    const encodedKey = await call("/v1/sessions/s1/lists/ns/%6B", { token: key, body: { x: 1 }, headers });
    const encodedSession = await call("/v1/sessions/%731/lists/ns/k", { token: key, body: { x: 1 }, headers });
    const listed = await (await call("/v1/sessions/s1/lists/ns/k", { token: key })).json<{ items: { seq: number }[] }>();
    expect(listed.items, "one append for one key").toHaveLength(1);
    expect([encodedKey.headers.get("idempotency-replayed"), encodedSession.headers.get("idempotency-replayed")]).toEqual(["true", "true"]);
  });
});
