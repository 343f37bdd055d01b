import { Hono } from "hono";
import { deploymentProviders, modelsDeployment } from "../../models/deployment.ts";
import { hostedProvider } from "../../models/hosted-providers.ts";
import { secretsKeyProblem } from "../../secrets/secret-box.ts";
import { egressDetails, egressProblem, type EgressProblem } from "../../schema/egress-policy.ts";
import { ProviderIdSchema, PutProviderSchema, type ProviderKeyInfo } from "../../schema/providers.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { fail, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, pathParam } from "../validate.ts";

/** A provider this service implements; 404 UnknownProvider otherwise (after the shape checks, 400 first). */
function knownProvider(provider: string): string {
  if (!hostedProvider(provider)) throw fail("UnknownProvider", `No provider ${provider}; GET /v1/providers and docs/providers.md list the providers`, { provider });
  return provider;
}

/**
 * Why `baseUrl` may not be a tenant's provider host: the egress policy of every outbound URL, and
 * no fragment (the provider's paths are appended to the base URL, and would land in it).
 */
function baseUrlProblem(baseUrl: string, localDevelopment: boolean): EgressProblem | undefined {
  return egressProblem(baseUrl, localDevelopment, "baseUrl") ?? (new URL(baseUrl).hash === "" ? undefined : { message: "baseUrl may not have a fragment" });
}

/**
 * The tenant's provider credentials (bring your own key). A key is sealed by the TenantObject and
 * never answered again: listings show where each provider's key comes from and its last four
 * characters. Mounted at /v1 beside other sub-apps, so authentication is per route.
 */
export const providerRoutes = new Hono<AppEnv>()
  // The tenant's own keys, then the deployment's providers it may use and has no key of its own for.
  .get("/providers", requireTenant, async (c) => {
    const { tenantId } = c.get("caller");
    const settings = replyValue(await tenantStub(c.env, tenantId).providerSettings());
    const own = new Set(settings.keys.map((key) => key.provider));
    const deployment: ProviderKeyInfo[] = settings.deploymentKeys
      ? deploymentProviders(modelsDeployment(c.env))
          .filter((provider) => !own.has(provider))
          .map((provider) => ({ provider, source: "deployment" }))
      : [];
    return c.json([...settings.keys, ...deployment]);
  })
  .put("/providers/:provider", requireTenant, async (c) => {
    const named = pathParam(c, "provider", ProviderIdSchema);
    const { apiKey, baseUrl } = await jsonBody(c, PutProviderSchema);
    const provider = knownProvider(named);
    const problem = baseUrl === undefined ? undefined : baseUrlProblem(baseUrl, modelsDeployment(c.env).localDev);
    if (problem) throw fail("InvalidBaseUrl", problem.message, { provider, ...egressDetails(problem) });
    // A deployment without the secret can store no key: answered before the tenant's object is asked.
    const unconfigured = secretsKeyProblem(c.env.SECRETS_KEY);
    if (unconfigured) throw fail("NotConfigured", unconfigured, { secret: "SECRETS_KEY" });
    const { tenantId } = c.get("caller");
    return c.json(replyValue(await tenantStub(c.env, tenantId).putProviderKey(provider, apiKey, baseUrl)));
  })
  .delete("/providers/:provider", requireTenant, async (c) => {
    const provider = knownProvider(pathParam(c, "provider", ProviderIdSchema));
    const { tenantId } = c.get("caller");
    replyValue(await tenantStub(c.env, tenantId).deleteProviderKey(provider));
    return c.body(null, 204);
  });
