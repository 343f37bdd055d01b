import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant-object.ts";
import { MAX_WEBHOOK_ENDPOINTS, type WebhookEndpoint } from "../../schema/webhooks.ts";
import { call, errorCode, newTenant } from "./helpers.ts";
import { expectError } from "./session-helpers.ts";
import { receiver, register } from "./webhooks-helpers.ts";

// Registering, listing and deleting a tenant's webhook endpoints through the real Hono app and
// TenantObject: validation and bounds (nothing written on a refusal), the secret shown once.

async function listed(key: string): Promise<WebhookEndpoint[]> {
  const response = await call("/v1/webhooks", { token: key });
  expect(response.status).toBe(200);
  return (await response.json<{ items: WebhookEndpoint[] }>()).items;
}

async function endpointRows(tenantId: string): Promise<{ endpoint_id: string; sealed_secret: string; url: string; events: string }[]> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
    state.storage.sql.exec<{ endpoint_id: string; sealed_secret: string; url: string; events: string }>("SELECT endpoint_id, sealed_secret, url, events FROM webhook_endpoints").toArray(),
  );
}

describe("webhook endpoints", () => {
  it("registers an endpoint, answers its secret once, lists it without the secret and deletes it", async () => {
    const { tenantId, key } = await newTenant("whreg");
    const url = receiver("reg").url("ok");
    const created = await register(key, url, ["operation.settled", "operation.suspended", "operation.settled"]);
    expect(created).toEqual({ id: expect.stringMatching(/^wh_/), url, events: ["operation.settled", "operation.suspended"], createdAt: expect.any(Number), secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/) });

    const items = await listed(key);
    expect(items).toEqual([{ id: created.id, url, events: ["operation.settled", "operation.suspended"], createdAt: created.createdAt }]);
    expect(JSON.stringify(items)).not.toContain(created.secret);
    // Stored sealed: the plain secret is nowhere in the tenant's row.
    const [row] = await endpointRows(tenantId);
    expect(row?.sealed_secret).toMatch(/^v1\./);
    expect(JSON.stringify(row)).not.toContain(created.secret.slice("whsec_".length));

    const deleted = await call(`/v1/webhooks/${created.id}`, { method: "DELETE", token: key });
    expect(deleted.status).toBe(204);
    expect(await listed(key)).toEqual([]);
    await expectError(await call(`/v1/webhooks/${created.id}`, { method: "DELETE", token: key }), 404, "NotFound");
    await expectError(await call(`/v1/webhooks/${created.id}/deliveries`, { token: key }), 404, "NotFound");
  });

  it("refuses bad bodies with 400 ValidationFailed and non-https urls with 422 InvalidWebhookUrl, writing nothing", async () => {
    const { tenantId, key } = await newTenant("whbad");
    const ok = "https://example.com/hook";
    const invalid: unknown[] = [
      { url: ok, events: [] },
      { url: ok, events: ["operation.exploded"] },
      { url: ok },
      { events: ["operation.settled"] },
      { url: "", events: ["operation.settled"] },
      { url: `https://example.com/${"x".repeat(2048)}`, events: ["operation.settled"] },
      { url: ok, events: ["operation.settled"], secret: "mine" },
    ];
    for (const body of invalid) {
      const response = await call("/v1/webhooks", { body, token: key });
      expect({ body, status: response.status, code: await errorCode(response) }).toEqual({ body, status: 400, code: "ValidationFailed" });
    }
    for (const url of ["not a url", "http://example.com/hook", "ftp://example.com/hook", "https://user:pw@example.com/hook"]) {
      const response = await call("/v1/webhooks", { body: { url, events: ["operation.settled"] }, token: key });
      expect({ url, status: response.status, code: await errorCode(response) }).toEqual({ url, status: 422, code: "InvalidWebhookUrl" });
    }
    expect(await endpointRows(tenantId)).toEqual([]);
    expect((await call("/v1/webhooks", { body: { url: ok, events: ["operation.settled"] } })).status).toBe(401);
  });

  it("allows loopback http only in local development (the test pool runs with it on)", async () => {
    const { key } = await newTenant("whloop");
    expect((await call("/v1/webhooks", { body: { url: "http://127.0.0.1:9/hook", events: ["operation.settled"] }, token: key })).status).toBe(201);
    const privateHost = await call("/v1/webhooks", { body: { url: "http://10.0.0.1/hook", events: ["operation.settled"] }, token: key });
    expect(await privateHost.json()).toMatchObject({ error: { code: "InvalidWebhookUrl", details: { reason: "unsafe_address", rule: "private" } } });
  });

  it(`bounds a tenant at ${MAX_WEBHOOK_ENDPOINTS} endpoints with 422 LimitExceeded`, async () => {
    const { tenantId, key } = await newTenant("whmax");
    for (let i = 0; i < MAX_WEBHOOK_ENDPOINTS; i++) await register(key, `https://example.com/hook/${i}`);
    const refused = await call("/v1/webhooks", { body: { url: "https://example.com/one-more", events: ["operation.settled"] }, token: key });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "webhooks", limit: MAX_WEBHOOK_ENDPOINTS } } });
    expect(await endpointRows(tenantId)).toHaveLength(MAX_WEBHOOK_ENDPOINTS);
    // Deleting one makes room again.
    const [first] = await listed(key);
    expect((await call(`/v1/webhooks/${first?.id}`, { method: "DELETE", token: key })).status).toBe(204);
    await register(key, "https://example.com/one-more");
  });

  it("a repeat with the same Idempotency-Key registers nothing more and never shows the secret again", async () => {
    const { tenantId, key } = await newTenant("whidem");
    const body = { url: "https://example.com/hook", events: ["operation.settled"] };
    const headers = { "idempotency-key": "register-once" };
    const first = await call("/v1/webhooks", { body, token: key, headers });
    expect(first.status).toBe(201);
    const created = await first.json<{ id: string; secret: string }>();
    const repeat = await call("/v1/webhooks", { body, token: key, headers });
    expect(repeat.status).toBe(409);
    expect(repeat.headers.get("idempotency-replayed")).toBe("true");
    const text = await repeat.text();
    expect(text).not.toContain(created.secret);
    expect(JSON.parse(text)).toMatchObject({ error: { code: "KeySecretNotReplayed", details: { webhookId: created.id } } });
    // A refusal like any other: it names this request, not the first one.
    expect(JSON.parse(text)).toMatchObject({ error: { requestId: repeat.headers.get("x-request-id") } });
    expect(repeat.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
    expect(await endpointRows(tenantId)).toHaveLength(1);
  });

  it("keeps tenants apart: another tenant's endpoint is unknown", async () => {
    const owner = await newTenant("whown");
    const other = await newTenant("whoth");
    const created = await register(owner.key, "https://example.com/hook");
    expect(await listed(other.key)).toEqual([]);
    await expectError(await call(`/v1/webhooks/${created.id}`, { method: "DELETE", token: other.key }), 404, "NotFound");
    await expectError(await call(`/v1/webhooks/${created.id}/deliveries`, { token: other.key }), 404, "NotFound");
    await expectError(await call(`/v1/webhooks/bad%20id/deliveries`, { token: owner.key }), 400, "ValidationFailed");
    await expectError(await call(`/v1/webhooks/wh_unknown/deliveries?cursor=garbage`, { token: owner.key }), 400, "ValidationFailed");
    expect(await listed(owner.key)).toHaveLength(1);
  });
});
