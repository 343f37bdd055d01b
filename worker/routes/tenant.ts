import { Hono } from "hono";
import { createModelRegistry, modelCatalog } from "../../models/registry.ts";
import type { AppEnv } from "../env.ts";
import { requireTenant } from "../middleware/auth.ts";

/** Who the caller is, and which models exist (spec/API.md "Tenant"). */
// Mounted at /v1 beside other sub-apps, so authentication is per route, not a `/v1/*` middleware.
export const tenantRoutes = new Hono<AppEnv>()
  .get("/me", requireTenant, (c) => c.json(c.get("caller")))
  .get("/models", requireTenant, (c) => c.json(modelCatalog(createModelRegistry({ scripted: c.env.SCRIPTED_MODELS === "on" }))));
