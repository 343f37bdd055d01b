import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { adminToken, call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// A tenant's provider key that no longer opens (docs/security.md: "Changing SECRETS_KEY
// makes every sealed secret unreadable: tenants put their provider keys again"). Until it is put
// again the tenant has no usable key for that provider, and docs/providers.md says a run then
// fails at once `provider_auth` ("or no key is configured for it"), naming the provider and what
// to do. A seal moved to another provider's row does not open either (it is bound to tenant and
// provider), which is the same failure as a changed SECRETS_KEY. The tenant may not use the
// deployment's keys, so nothing is sent anywhere in any case.

describe("a run on a provider whose stored key no longer opens", { timeout: 30_000 }, () => {
  it("fails provider_auth naming the provider, not assistant_error with the secret box's words", async () => {
    const setup = await laneSetup("unread");
    const quotas = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { deploymentKeys: false }, token: adminToken() });
    expect(quotas.status).toBe(200);
    for (const provider of ["anthropic", "openai"]) {
      const put = await call(`/v1/providers/${provider}`, { method: "PUT", body: { apiKey: `sk-${provider}-tenant-key-123456`, baseUrl: "http://127.0.0.1:9/v1" }, token: setup.key });
      expect(put.status).toBe(200);
    }
    await runInDurableObject(env.TENANTS.getByName(setup.tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE provider_keys SET sealed = (SELECT sealed FROM provider_keys WHERE provider = 'anthropic') WHERE provider = 'openai'");
    });
    const patched = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: { provider: "openai", modelId: "gpt-4o-mini" } }, token: setup.key });
    expect(patched.status).toBe(200);
    const prompted = await call(`${setup.lanePath}/prompt`, { body: { prompt: "hello", wait: 20 }, token: setup.key });
    expect(prompted.status).toBe(200);
    const record = await prompted.json<{ status: string; error?: { code: string; message: string } }>();
    expect(record.status).toBe("failed");
    expect(record.error?.code).toBe("provider_auth");
    expect(record.error?.message).toContain("openai");
    expect(record.error?.message).toContain("PUT /v1/providers/openai");
    expect(record.error?.message).not.toMatch(/sealed secret|does not open with this key/i);
  });
});
