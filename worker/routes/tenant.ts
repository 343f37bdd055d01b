import { Hono } from "hono";
import { modelsDeployment, usableProviders } from "../../models/deployment.ts";
import { createModelRegistry, modelCatalog } from "../../models/registry.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { assertTenantCanUse } from "../model-check.ts";
import { jsonBody } from "../validate.ts";
import { DefaultModelSchema } from "../../schema/providers.ts";

/** Who the caller is, and which models it can use (spec/API.md "Tenant"). */
// Mounted at /v1 beside other sub-apps, so authentication is per route, not a `/v1/*` middleware.
export const tenantRoutes = new Hono<AppEnv>()
  // `usage`: the tenant's usage totals, forwarded asynchronously by its sessions (at most once).
  // `defaultModel`: the model of new lanes that name none, unless their session sets its own.
  .get("/me", requireTenant, async (c) => {
    const caller = c.get("caller");
    const tenant = tenantStub(c.env, caller.tenantId);
    const [usage, settings] = await Promise.all([tenant.usageTotals(), tenant.providerSettings()]);
    return c.json({ ...caller, defaultModel: replyValue(settings).defaultModel, usage });
  })
  // Only a model the tenant can use now (422 UnknownModel); a lane creation checks again.
  .put("/me/default-model", requireTenant, async (c) => {
    const { tenantId } = c.get("caller");
    const model = await jsonBody(c, DefaultModelSchema);
    await assertTenantCanUse(c.env, tenantId, model);
    return c.json(replyValue(await tenantStub(c.env, tenantId).setDefaultModel(model)).defaultModel);
  })
  .delete("/me/default-model", requireTenant, async (c) => {
    replyValue(await tenantStub(c.env, c.get("caller").tenantId).setDefaultModel(null));
    return c.body(null, 204);
  })
  // pi-ai's catalog, filtered to the providers this tenant has credentials for (its own or the deployment's).
  .get("/models", requireTenant, async (c) => {
    const { tenantId } = c.get("caller");
    const deployment = modelsDeployment(c.env);
    const holdings = replyValue(await tenantStub(c.env, tenantId).providerSettings());
    return c.json(modelCatalog(createModelRegistry({ scripted: deployment.scripted }), usableProviders(deployment, holdings)));
  });
