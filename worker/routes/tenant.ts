import { Hono } from "hono";
import { createModelRegistry, modelCatalog } from "../../models/registry.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { requireTenant } from "../middleware/auth.ts";

/** Who the caller is, and which models exist (spec/API.md "Tenant"). */
// Mounted at /v1 beside other sub-apps, so authentication is per route, not a `/v1/*` middleware.
export const tenantRoutes = new Hono<AppEnv>()
  // `usage`: the tenant's usage totals, forwarded asynchronously by its sessions (at most once).
  .get("/me", requireTenant, async (c) => {
    const caller = c.get("caller");
    return c.json({ ...caller, usage: await tenantStub(c.env, caller.tenantId).usageTotals() });
  })
  .get("/models", requireTenant, (c) => c.json(modelCatalog(createModelRegistry({ scripted: c.env.SCRIPTED_MODELS === "on" }))));
