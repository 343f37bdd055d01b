import { Hono } from "hono";
import { modelsDeployment, usableProviders } from "../../models/deployment.ts";
import { createModelRegistry, modelCatalog } from "../../models/registry.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";

/** Who the caller is, and which models it can use (spec/API.md "Tenant"). */
// Mounted at /v1 beside other sub-apps, so authentication is per route, not a `/v1/*` middleware.
export const tenantRoutes = new Hono<AppEnv>()
  // `usage`: the tenant's usage totals, forwarded asynchronously by its sessions (at most once).
  .get("/me", requireTenant, async (c) => {
    const caller = c.get("caller");
    return c.json({ ...caller, usage: await tenantStub(c.env, caller.tenantId).usageTotals() });
  })
  // pi-ai's catalog, filtered to the providers this tenant has credentials for (its own or the deployment's).
  .get("/models", requireTenant, async (c) => {
    const { tenantId } = c.get("caller");
    const deployment = modelsDeployment(c.env);
    const holdings = replyValue(await tenantStub(c.env, tenantId).providerSettings());
    return c.json(modelCatalog(createModelRegistry({ scripted: deployment.scripted }), usableProviders(deployment, holdings)));
  });
