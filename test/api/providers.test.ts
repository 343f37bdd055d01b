import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { adminToken, call, errorCode, newTenant } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// Tenant provider keys (bring your own key): put, list, delete; sealed at rest; a tenant key wins
// over the deployment's; the admin decides whether a tenant may use the deployment's keys; the
// model catalog and lane configuration follow the credentials the tenant has.

const ANTHROPIC_KEY = "sk-ant-tenant-secret-key-7a9f";
const OPENAI_TENANT_KEY = "sk-tenant-own-openai-key-4c2e";

async function put(key: string, provider: string, body: unknown): Promise<Response> {
  return call(`/v1/providers/${provider}`, { method: "PUT", body, token: key });
}

async function providers(key: string): Promise<unknown[]> {
  const response = await call("/v1/providers", { token: key });
  expect(response.status).toBe(200);
  return response.json<unknown[]>();
}

async function modelProviders(key: string): Promise<Set<string>> {
  const response = await call("/v1/models", { token: key });
  expect(response.status).toBe(200);
  return new Set((await response.json<{ provider: string }[]>()).map((row) => row.provider));
}

describe("tenant provider keys", () => {
  it("are put, listed by their last four characters only, and deleted; the key is never echoed", async () => {
    const tenant = await newTenant("prov");
    const stored = await put(tenant.key, "anthropic", { apiKey: ANTHROPIC_KEY });
    expect(stored.status).toBe(200);
    const storedText = await stored.text();
    expect(storedText).not.toContain(ANTHROPIC_KEY);
    expect(JSON.parse(storedText)).toEqual({ provider: "anthropic", source: "tenant", keyHint: "…7a9f" });

    const listed = await providers(tenant.key);
    expect(listed).toEqual([
      { provider: "anthropic", source: "tenant", keyHint: "…7a9f" },
      { provider: "openai", source: "deployment" },
    ]);
    expect(JSON.stringify(listed)).not.toContain(ANTHROPIC_KEY);

    const deleted = await call("/v1/providers/anthropic", { method: "DELETE", token: tenant.key });
    expect(deleted.status).toBe(204);
    expect(await providers(tenant.key)).toEqual([{ provider: "openai", source: "deployment" }]);
  });

  it("are stored sealed: the raw row holds neither the key nor any part of it beyond the hint", async () => {
    const tenant = await newTenant("prov");
    expect((await put(tenant.key, "anthropic", { apiKey: ANTHROPIC_KEY, baseUrl: "https://proxy.example.com/v1" })).status).toBe(200);
    const rows = await runInDurableObject(env.TENANTS.getByName(tenant.tenantId), (_instance: TenantObject, state) =>
      state.storage.sql.exec<Record<string, string | number | null>>("SELECT * FROM provider_keys").toArray(),
    );
    expect(rows).toHaveLength(1);
    const row = rows[0];
    expect(row).toMatchObject({ provider: "anthropic", key_hint: "…7a9f", base_url: "https://proxy.example.com/v1" });
    expect(String(row?.sealed)).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(JSON.stringify(rows)).not.toContain("sk-ant-tenant-secret");
  });

  it("win over the deployment's key for the same provider", async () => {
    const tenant = await newTenant("prov");
    expect(await providers(tenant.key)).toEqual([{ provider: "openai", source: "deployment" }]);
    expect((await put(tenant.key, "openai", { apiKey: OPENAI_TENANT_KEY })).status).toBe(200);
    expect(await providers(tenant.key)).toEqual([{ provider: "openai", source: "tenant", keyHint: "…4c2e" }]);
    const grant = await env.TENANTS.getByName(tenant.tenantId).providerGrant("openai");
    expect(grant).toEqual({ key: { apiKey: OPENAI_TENANT_KEY }, deploymentKeys: true });
  });

  it("refuse unknown providers, bad bodies and non-https base URLs, writing nothing", async () => {
    const tenant = await newTenant("prov");
    const unknown = await put(tenant.key, "nosuch", { apiKey: "sk-whatever-key-1234" });
    expect(unknown.status).toBe(404);
    expect(await errorCode(unknown)).toBe("UnknownProvider");
    const noKey = await put(tenant.key, "openai", { baseUrl: "https://api.example.com" });
    expect(noKey.status).toBe(400);
    expect(await errorCode(noKey)).toBe("ValidationFailed");
    for (const baseUrl of ["http://api.example.com/v1", "http://192.168.1.5/v1", "ftp://x.example.com", "https://user:pw@x.example.com", "not a url"]) {
      const refused = await put(tenant.key, "anthropic", { apiKey: ANTHROPIC_KEY, baseUrl });
      expect(refused.status, baseUrl).toBe(422);
      expect(await errorCode(refused)).toBe("InvalidBaseUrl");
    }
    expect(await providers(tenant.key)).toEqual([{ provider: "openai", source: "deployment" }]);
    expect((await call("/v1/providers", { token: "sk_nobody_xyz" })).status).toBe(401);
  });
});

describe("the deployment-keys permission", () => {
  it("defaults to allowed and, once denied by the admin, hides the deployment's providers", async () => {
    const tenant = await newTenant("prov");
    const quotasPath = `/v1/admin/tenants/${tenant.tenantId}/quotas`;
    expect(await (await call(quotasPath, { token: adminToken() })).json()).toMatchObject({ deploymentKeys: true });
    expect(await modelProviders(tenant.key)).toEqual(new Set(["openai", "scripted"]));

    const denied = await call(quotasPath, { method: "PATCH", body: { deploymentKeys: false }, token: adminToken() });
    expect(await denied.json()).toMatchObject({ deploymentKeys: false });
    expect(await providers(tenant.key)).toEqual([]);
    expect(await modelProviders(tenant.key)).toEqual(new Set(["scripted"]));
    expect(await env.TENANTS.getByName(tenant.tenantId).providerGrant("openai")).toEqual({ deploymentKeys: false });

    // Its own key still works.
    expect((await put(tenant.key, "openai", { apiKey: OPENAI_TENANT_KEY })).status).toBe(200);
    expect(await modelProviders(tenant.key)).toEqual(new Set(["openai", "scripted"]));
  });
});

describe("GET /v1/models", () => {
  it("lists pi-ai's catalog for the providers the tenant has credentials for, with names and prices", async () => {
    const tenant = await newTenant("prov");
    const before = await (await call("/v1/models", { token: tenant.key })).json<{ provider: string; modelId: string }[]>();
    expect(before.some((row) => row.provider === "anthropic")).toBe(false);
    expect(before.find((row) => row.provider === "openai" && row.modelId === "gpt-4o-mini")).toEqual({
      provider: "openai",
      modelId: "gpt-4o-mini",
      name: expect.any(String),
      contextWindow: expect.any(Number),
      maxTokens: expect.any(Number),
      input: ["text", "image"],
      reasoning: false,
      cost: { input: expect.any(Number), output: expect.any(Number), cacheRead: expect.any(Number), cacheWrite: expect.any(Number) },
    });
    expect((await put(tenant.key, "anthropic", { apiKey: ANTHROPIC_KEY })).status).toBe(200);
    expect(await modelProviders(tenant.key)).toEqual(new Set(["anthropic", "openai", "scripted"]));
  });
});

describe("lane configuration against the tenant's credentials", () => {
  it("refuses a model of a provider the tenant has no key for (422 UnknownModel) and accepts it once a key is put", async () => {
    const setup = await laneSetup("prov");
    const claude = { provider: "anthropic", modelId: "claude-sonnet-4-5" };
    const refused = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: claude }, token: setup.key });
    expect(refused.status).toBe(422);
    expect(await errorCode(refused)).toBe("UnknownModel");
    const lane = await call(`${setup.sessionPath}/lanes/other`, { method: "PUT", body: { model: claude }, token: setup.key });
    expect(lane.status).toBe(422);

    expect((await put(setup.key, "anthropic", { apiKey: ANTHROPIC_KEY })).status).toBe(200);
    const accepted = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: claude }, token: setup.key });
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toMatchObject({ model: claude });
    // The deployment's OpenAI key serves it at once.
    const openai = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: { provider: "openai", modelId: "gpt-4o-mini" } }, token: setup.key });
    expect(openai.status).toBe(200);
  });
});

describe("provider base URLs", () => {
  it("in local development, plain http to a loopback host is accepted, to any other host refused", async () => {
    const setup = await laneSetup("baseurls");
    for (const baseUrl of ["http://localhost:11434/v1", "http://127.0.0.1:9999/v1", "http://[::1]:8080"]) {
      expect((await put(setup.key, "anthropic", { apiKey: ANTHROPIC_KEY, baseUrl })).status, baseUrl).toBe(200);
    }
    const privateHost = await put(setup.key, "anthropic", { apiKey: ANTHROPIC_KEY, baseUrl: "http://192.168.1.5/v1" });
    expect(await privateHost.json()).toMatchObject({ error: { code: "InvalidBaseUrl", details: { provider: "anthropic", reason: "unsafe_address", rule: "private" } } });
    const publicHttp = await put(setup.key, "anthropic", { apiKey: ANTHROPIC_KEY, baseUrl: "http://localhost.example.com/v1" });
    expect(await publicHttp.json()).toMatchObject({ error: { code: "InvalidBaseUrl", message: "baseUrl must use https (plain http only to a loopback host: localhost, 127.0.0.1 or [::1])", details: { provider: "anthropic" } } });
    const fragment = await put(setup.key, "anthropic", { apiKey: ANTHROPIC_KEY, baseUrl: "https://proxy.example.com/v1#x" });
    expect(await fragment.json()).toMatchObject({ error: { code: "InvalidBaseUrl", message: "baseUrl may not have a fragment" } });
  });
});
