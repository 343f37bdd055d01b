import { Hono } from "hono";
import { CreateKeySchema, CreateTenantSchema, IdSchema, PageQuerySchema, TenantQuotasPatchSchema } from "../../schema/api.ts";
import { fromWire } from "../../schema/wire.ts";
import { tenantStub, type AppContext, type AppEnv } from "../env.ts";
import { fail, HttpFailure, replyValue } from "../http-error.ts";
import { quotaLeases, requireAdmin } from "../middleware/auth.ts";
import { verifiedKeys } from "../middleware/verified-keys.ts";
import { idempotent, keyDerivedToken, newId, replayInstead } from "../middleware/idempotency.ts";
import { keySecretNotReplayed } from "../../durable-objects/tenant/tenant-keys.ts";
import { jsonBody, pathParam, queryParams } from "../validate.ts";

/** Tenant and key administration (spec/API.md "Admin"), behind the admin token. */
// Admin keys are remembered by an object no tenant can be named after (ids cannot contain ':').
const adminIdempotency = idempotent((c) => c.env.TENANTS.getByName("admin:idempotency"));

/**
 * The admin's list of tenants. Each tenant is its own object, so a list needs one registry: a
 * single directory object, touched only by tenant creation and the admin's listing (never by a
 * tenant's requests). A tenant is registered after its object is created; a creation that failed
 * in between is completed by its retry, which finds the tenant (409 `TenantExists`) and registers it.
 */
const directory = (c: AppContext) => c.env.TENANTS.getByName("admin:directory");

export const adminRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .post("/tenants", adminIdempotency, async (c) => {
    const body = await jsonBody(c, CreateTenantSchema);
    // Without an id, one derived from the Idempotency-Key: a retry after a lost answer names the
    // tenant the first request created (409 TenantExists) instead of creating a second one.
    const id = body.id ?? newId("t_", 20, await keyDerivedToken(c));
    // A deleted (or deleting) tenant's id stays reserved: a new tenant never meets its objects.
    const status = await directory(c).directoryStatus(id);
    if (status === "deleting" || status === "deleted") throw fail("TenantExists", `Tenant ${id} was deleted; its id stays reserved`, { status });
    const created = fromWire(await tenantStub(c.env, id).createTenant(id, body.name ?? id));
    if (!created.ok) {
      const { name, createdAt } = created.error.details ?? {};
      if (created.error.code === "TenantExists" && typeof name === "string" && typeof createdAt === "number") {
        // The retention the operator may have set meanwhile is listed with it, for the cron's sweep.
        const quotas = replyValue(await tenantStub(c.env, id).getQuotas());
        await directory(c).registerTenant({ id, name, createdAt }, quotas.sessionRetentionDays);
      }
      throw new HttpFailure(created.error);
    }
    await directory(c).registerTenant(created.value);
    return c.json(created.value, 201);
  })
  .get("/tenants", async (c) => {
    const query = queryParams(c, PageQuerySchema);
    return c.json(replyValue(await directory(c).listTenants(query.limit ?? 50, query.cursor)));
  })
  // The secret is in this answer only: a replay (same Idempotency-Key) names the key it created and
  // says that the secret is not shown again (revoke the key if it was lost).
  .post("/tenants/:tenantId/keys", adminIdempotency, async (c) => {
    const tenantId = pathParam(c, "tenantId", IdSchema);
    const body = await jsonBody(c, CreateKeySchema);
    // With an Idempotency-Key the key id derives from the claimed key: a retry after the first
    // request's answer was lost (a crash after the key was stored) names the same key, and is told
    // that its secret is not shown again instead of minting a second key.
    const token = await keyDerivedToken(c);
    const derivedKeyId = token && newId("key_", 24, token);
    const created = replyValue(await tenantStub(c.env, tenantId).createKey(body.name ?? "", derivedKeyId));
    replayInstead(c, 409, { error: keySecretNotReplayed(created.keyId) });
    return c.json(created, 201);
  })
  .get("/tenants/:tenantId/keys", async (c) => {
    const tenantId = pathParam(c, "tenantId", IdSchema);
    const query = queryParams(c, PageQuerySchema);
    return c.json(replyValue(await tenantStub(c.env, tenantId).listKeys(query.limit ?? 50, query.cursor)));
  })
  .get("/tenants/:tenantId/quotas", async (c) => {
    const tenantId = pathParam(c, "tenantId", IdSchema);
    return c.json(replyValue(await tenantStub(c.env, tenantId).getQuotas()));
  })
  .patch("/tenants/:tenantId/quotas", async (c) => {
    const tenantId = pathParam(c, "tenantId", IdSchema);
    const patch = await jsonBody(c, TenantQuotasPatchSchema);
    const quotas = replyValue(await tenantStub(c.env, tenantId).setQuotas(patch));
    // The directory keeps which tenants the cron sweeps for retention (worker/retention-sweep.ts);
    // a tenant missing from it (a creation that stopped before the directory) is listed here.
    if (patch.sessionRetentionDays !== undefined) {
      const tenant = replyValue(await tenantStub(c.env, tenantId).info());
      await directory(c).registerTenant(tenant, quotas.sessionRetentionDays);
    }
    // A lease of this isolate was sized under the old quota: a lowered one applies here at once.
    quotaLeases.drop(tenantId);
    return c.json(quotas);
  })
  .delete("/tenants/:tenantId/keys/:keyId", async (c) => {
    const tenantId = pathParam(c, "tenantId", IdSchema);
    const keyId = pathParam(c, "keyId", IdSchema);
    try {
      replyValue(await tenantStub(c.env, tenantId).revokeKey(keyId));
    } finally {
      // Refused at once on this isolate; other isolates trust their verification for at most KEY_TRUST_MS.
      verifiedKeys.forgetKey(tenantId, keyId);
    }
    return c.body(null, 204);
  });
