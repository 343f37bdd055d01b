import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TENANT_MIGRATIONS } from "../../durable-objects/tenant/tenant-migrations.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { MAX_WEBHOOK_ENDPOINTS, MAX_WEBHOOKS_PER_HOST, type WebhookEndpoint } from "../../schema/webhooks.ts";
import { rerunMigration } from "../helpers/storage.ts";
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
    expect(created).toEqual({
      id: expect.stringMatching(/^wh_/),
      url,
      events: ["operation.settled", "operation.suspended"],
      createdAt: expect.any(Number),
      status: "enabled",
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
    });

    const items = await listed(key);
    expect(items).toEqual([{ id: created.id, url, events: ["operation.settled", "operation.suspended"], createdAt: created.createdAt, status: "enabled" }]);
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
    for (let i = 0; i < MAX_WEBHOOK_ENDPOINTS; i++) await register(key, `https://hooks-${i % 4}.example.com/hook/${i}`);
    const refused = await call("/v1/webhooks", { body: { url: "https://example.com/one-more", events: ["operation.settled"] }, token: key });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "webhooks", limit: MAX_WEBHOOK_ENDPOINTS } } });
    expect(await endpointRows(tenantId)).toHaveLength(MAX_WEBHOOK_ENDPOINTS);
    // Deleting one makes room again.
    const [first] = await listed(key);
    expect((await call(`/v1/webhooks/${first?.id}`, { method: "DELETE", token: key })).status).toBe(204);
    expect(first?.url).toBe("https://hooks-0.example.com/hook/0");
    await register(key, "https://hooks-0.example.com/one-more");
  });

  it("registers one endpoint per URL: the same URL again is 409 WebhookExists naming the first, writing nothing", async () => {
    const { tenantId, key } = await newTenant("whdup");
    const first = await register(key, "https://example.com/hooks/agent");
    // The same URL however it is spelled: case of the host, default port, a fragment (never sent).
    for (const url of ["https://example.com/hooks/agent", "https://EXAMPLE.com:443/hooks/agent", "https://example.com/hooks/agent#again"]) {
      const again = await call("/v1/webhooks", { body: { url, events: ["operation.suspended"] }, token: key });
      expect({ url, status: again.status }).toEqual({ url, status: 409 });
      const body = await again.json<{ error: { code: string; message: string; details: { webhookId: string } } }>();
      expect(body.error).toMatchObject({ code: "WebhookExists", details: { webhookId: first.id } });
      expect(body.error.message).toContain(first.id);
    }
    expect(await endpointRows(tenantId)).toHaveLength(1);
    // Another path or query on the same host is another endpoint.
    await register(key, "https://example.com/hooks/agent?v=2");
    // Once the first is deleted its URL is free again.
    expect((await call(`/v1/webhooks/${first.id}`, { method: "DELETE", token: key })).status).toBe(204);
    await register(key, "https://example.com/hooks/agent");
  });

  it(`allows at most ${MAX_WEBHOOKS_PER_HOST} endpoints per destination host (422 LimitExceeded naming the host), whatever the port or path`, async () => {
    const { tenantId, key } = await newTenant("whhost");
    for (const url of ["https://hooks.example.com/a", "https://hooks.example.com:8443/b", "https://HOOKS.example.com./c"]) await register(key, url);
    for (const url of ["https://hooks.example.com/d", "https://hooks.example.com:9443/a"]) {
      const refused = await call("/v1/webhooks", { body: { url, events: ["operation.settled"] }, token: key });
      expect(refused.status).toBe(422);
      expect(await refused.json()).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "webhooks_per_host", limit: MAX_WEBHOOKS_PER_HOST, host: "hooks.example.com" } } });
    }
    expect(await endpointRows(tenantId)).toHaveLength(MAX_WEBHOOKS_PER_HOST);
    // Other hosts, subdomains included, have their own count.
    await register(key, "https://other.example.com/a");
    await register(key, "https://example.com/a");
  });

  it("counts an address in every spelling the egress policy reads as one destination: per URL and per host", async () => {
    const { tenantId, key } = await newTenant("whspell");
    const first = await register(key, "https://8.8.8.8/a");
    // The same URL with the address written inside IPv6 (mapped, NAT64, 6to4) is the same endpoint.
    for (const url of ["https://[::ffff:8.8.8.8]/a", "https://[64:ff9b::808:808]/a", "https://[2002:808:808::]/a"]) {
      const again = await call("/v1/webhooks", { body: { url, events: ["operation.settled"] }, token: key });
      expect({ url, status: again.status }).toEqual({ url, status: 409 });
      expect(await again.json()).toMatchObject({ error: { code: "WebhookExists", details: { webhookId: first.id } } });
    }
    await register(key, "https://[::ffff:8.8.8.8]/b");
    await register(key, "https://[64:ff9b::8.8.8.8]/c");
    const refused = await call("/v1/webhooks", { body: { url: "https://8.8.8.8/d", events: ["operation.settled"] }, token: key });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "webhooks_per_host", host: "8.8.8.8" } } });
    expect(await endpointRows(tenantId)).toHaveLength(MAX_WEBHOOKS_PER_HOST);
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
    // Another key for the same URL is a new request, refused because the URL is registered; a
    // refusal is not remembered, so that key registers the URL once it is free.
    const otherKey = { "idempotency-key": "register-again" };
    const exists = await call("/v1/webhooks", { body, token: key, headers: otherKey });
    expect(exists.status).toBe(409);
    expect(exists.headers.get("idempotency-replayed")).toBeNull();
    expect(await exists.json()).toMatchObject({ error: { code: "WebhookExists", details: { webhookId: created.id } } });
    expect((await call(`/v1/webhooks/${created.id}`, { method: "DELETE", token: key })).status).toBe(204);
    const registered = await call("/v1/webhooks", { body, token: key, headers: otherKey });
    expect(registered.status).toBe(201);
    // The first key still replays its own refusal, never a registration.
    expect(await errorCode(await call("/v1/webhooks", { body, token: key, headers }))).toBe("KeySecretNotReplayed");
    expect(await endpointRows(tenantId)).toHaveLength(1);
  });

  it("an endpoint registered before migration 11 is enabled with no failures counted after it", async () => {
    const { tenantId, key } = await newTenant("whmig");
    const created = await register(key, "https://example.com/hook");
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      // The tables as the earlier build left them.
      state.storage.sql.exec("DROP INDEX webhook_deliveries_due_by_endpoint");
      for (const column of ["consecutive_failures", "failing_since", "disabled_at", "disabled_reason"]) state.storage.sql.exec(`ALTER TABLE webhook_endpoints DROP COLUMN ${column}`);
      rerunMigration(state.storage, TENANT_MIGRATIONS, "webhook_endpoint_health");
      expect(state.storage.sql.exec("SELECT consecutive_failures, failing_since, disabled_at FROM webhook_endpoints").toArray()).toEqual([
        { consecutive_failures: 0, failing_since: null, disabled_at: null },
      ]);
    });
    expect(await listed(key)).toEqual([{ id: created.id, url: created.url, events: ["operation.settled"], createdAt: created.createdAt, status: "enabled" }]);
  });

  it("keeps tenants apart: another tenant's endpoint is unknown", async () => {
    const owner = await newTenant("whown");
    const other = await newTenant("whoth");
    const created = await register(owner.key, "https://example.com/hook");
    expect(await listed(other.key)).toEqual([]);
    await expectError(await call(`/v1/webhooks/${created.id}`, { method: "DELETE", token: other.key }), 404, "NotFound");
    await expectError(await call(`/v1/webhooks/${created.id}/deliveries`, { token: other.key }), 404, "NotFound");
    await expectError(await call(`/v1/webhooks/${created.id}`, { method: "PATCH", body: { enabled: false }, token: other.key }), 404, "NotFound");
    await expectError(await call(`/v1/webhooks/bad%20id/deliveries`, { token: owner.key }), 400, "ValidationFailed");
    await expectError(await call(`/v1/webhooks/wh_unknown/deliveries?cursor=garbage`, { token: owner.key }), 400, "ValidationFailed");
    expect(await listed(owner.key)).toEqual([expect.objectContaining({ id: created.id, status: "enabled" })]);
    // The limits are each tenant's own: another tenant registers the same URL.
    await register(other.key, "https://example.com/hook");
  });
});
