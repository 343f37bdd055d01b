import { describe, expect, it } from "vitest";
import { createModelRegistry } from "../../models/registry.ts";
import { tenantModels, type TenantProviderGrant } from "../../models/tenant-models.ts";
import type { ModelsDeployment } from "../../models/deployment.ts";
import { completionText } from "../models/chat-completions-wire.ts";
import { drain, userContext } from "../models/helpers.ts";
import { wireFetch } from "../models/wire.ts";
import { call, errorCode, newTenant } from "./helpers.ts";

// A tenant that brings its own key for a Cloudflare provider never has its requests built from the
// deployment's Cloudflare configuration (CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_GATEWAY_ID: secrets of
// the deployment, docs/providers.md). pi-ai fills a URL's {…} placeholders from the provider
// environment, which is the deployment's: a tenant's request goes to its own baseUrl, with its
// account in it, or nowhere.

const DEPLOYMENT_SECRETS: Record<string, string> = {
  CLOUDFLARE_API_KEY: "deployment-cloudflare-token-0000000000",
  CLOUDFLARE_ACCOUNT_ID: "deploymentaccount5e3c",
  CLOUDFLARE_GATEWAY_ID: "deploymentgateway7f1d",
};

const deployment: ModelsDeployment = { scripted: false, secret: (name) => DEPLOYMENT_SECRETS[name], aiBinding: undefined, localDev: false };
const registry = createModelRegistry({ scripted: false, secret: deployment.secret });
const GATEWAY_MODEL = "workers-ai/@cf/deepseek-ai/deepseek-v4-flash-0731";
const TENANT_KEY = "tenant-own-cloudflare-token-1234";

async function request(grant: TenantProviderGrant): Promise<{ url: string | undefined; authorization: string | undefined; errorMessage: string | undefined }> {
  const target = registry.getModel("cloudflare-ai-gateway", GATEWAY_MODEL);
  if (!target) throw new Error("the gateway model is not in pi-ai's catalog");
  const wire = wireFetch([{ chunks: completionText(["hi"]) }]);
  const models = tenantModels(registry, { deployment, grant: async () => grant, fetch: wire.fetch });
  const played = await drain(models.streamSimple(target, userContext("hello")));
  return { url: wire.seen[0]?.url, authorization: wire.seen[0]?.headers["cf-aig-authorization"], errorMessage: played.message.errorMessage };
}

describe("a tenant's own Cloudflare key and the deployment's Cloudflare configuration", { timeout: 30_000 }, () => {
  it("a baseUrl with a {…} placeholder is refused 400 when stored", async () => {
    const tenant = await newTenant("cfprov");
    const stored = await call("/v1/providers/cloudflare-ai-gateway", { method: "PUT", body: { apiKey: TENANT_KEY, baseUrl: "https://tenant-proxy.example.com/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}" }, token: tenant.key });
    expect(stored.status).toBe(400);
    expect(await errorCode(stored)).toBe("ValidationFailed");
  });

  it("without a baseUrl of its own (or with one holding a placeholder), nothing is sent, and the failure says what to set", async () => {
    for (const key of [{ apiKey: TENANT_KEY }, { apiKey: TENANT_KEY, baseUrl: "https://tenant-proxy.example.com/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}" }]) {
      const sent = await request({ key, deploymentKeys: false });
      expect(sent.url).toBeUndefined();
      expect(sent.errorMessage).toContain("needs a baseUrl with the account");
    }
  });

  it("with its own baseUrl, the request goes there with the tenant's key and nothing of the deployment's", async () => {
    const baseUrl = "https://gateway.ai.cloudflare.com/v1/tenantaccount/tenantgateway/compat";
    const sent = await request({ key: { apiKey: TENANT_KEY, baseUrl }, deploymentKeys: true });
    expect(sent.errorMessage).toBeUndefined();
    expect(sent.url?.startsWith(`${baseUrl}/`)).toBe(true);
    expect(sent.authorization).toBe(`Bearer ${TENANT_KEY}`);
    for (const secret of Object.values(DEPLOYMENT_SECRETS)) expect(JSON.stringify(sent)).not.toContain(secret);
  });
});
