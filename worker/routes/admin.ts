import { Hono } from "hono";
import { CreateKeySchema, CreateTenantSchema, IdSchema, TenantQuotasPatchSchema } from "../../schema/api.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireAdmin } from "../middleware/auth.ts";
import { idempotent } from "../middleware/idempotency.ts";
import { jsonBody, validate } from "../validate.ts";

/** Tenant and key administration (spec/API.md "Admin"), behind the admin token. */
// Admin keys are remembered by an object no tenant can be named after (ids cannot contain ':').
const adminIdempotency = idempotent((c) => c.env.TENANTS.getByName("admin:idempotency"));

export const adminRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .post("/tenants", adminIdempotency, async (c) => {
    const body = await jsonBody(c, CreateTenantSchema);
    const id = body.id ?? `t_${crypto.randomUUID().replace(/-/g, "").slice(0, 20)}`;
    const tenant = replyValue(await tenantStub(c.env, id).createTenant(id, body.name ?? id));
    return c.json(tenant, 201);
  })
  .post("/tenants/:tenantId/keys", adminIdempotency, async (c) => {
    const tenantId = validate(IdSchema, c.req.param("tenantId"));
    const body = await jsonBody(c, CreateKeySchema);
    return c.json(replyValue(await tenantStub(c.env, tenantId).createKey(body.name ?? "")), 201);
  })
  .get("/tenants/:tenantId/quotas", async (c) => {
    const tenantId = validate(IdSchema, c.req.param("tenantId"));
    return c.json(replyValue(await tenantStub(c.env, tenantId).getQuotas()));
  })
  .patch("/tenants/:tenantId/quotas", async (c) => {
    const tenantId = validate(IdSchema, c.req.param("tenantId"));
    const patch = await jsonBody(c, TenantQuotasPatchSchema);
    return c.json(replyValue(await tenantStub(c.env, tenantId).setQuotas(patch)));
  })
  .delete("/tenants/:tenantId/keys/:keyId", async (c) => {
    const tenantId = validate(IdSchema, c.req.param("tenantId"));
    const keyId = validate(IdSchema, c.req.param("keyId"));
    replyValue(await tenantStub(c.env, tenantId).revokeKey(keyId));
    return c.body(null, 204);
  });
