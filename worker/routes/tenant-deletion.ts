import { Hono } from "hono";
import { IdSchema } from "../../schema/api.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { quotaLeases, requireAdmin } from "../middleware/auth.ts";
import { verifiedKeys } from "../middleware/verified-keys.ts";
import { pathParam } from "../validate.ts";

/**
 * `GET` and `DELETE /v1/admin/tenants/{tenantId}` (docs/data.md "Deleting data"), mounted at /v1/admin. The
 * tenant's own object is the authority (tenant/data-lifecycle.ts): the DELETE marks it deleting,
 * revokes its keys and queues its sessions, then the directory lists it as deleting; the object's
 * alarm deletes the sessions, leaves the directory's tombstone (its id stays reserved) and deletes
 * itself, after which both routes answer 404. A repeated DELETE answers the same progress.
 */
export const tenantDeletionRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .get("/tenants/:tenantId", async (c) => {
    const tenantId = pathParam(c, "tenantId", IdSchema);
    return c.json(replyValue(await tenantStub(c.env, tenantId).tenantDetail()));
  })
  .delete("/tenants/:tenantId", async (c) => {
    const tenantId = pathParam(c, "tenantId", IdSchema);
    const detail = replyValue(await tenantStub(c.env, tenantId).deleteTenant());
    // Refused at once on this isolate; other isolates trust a verification for at most KEY_TRUST_MS.
    verifiedKeys.forgetTenant(tenantId);
    quotaLeases.drop(tenantId);
    await c.env.TENANTS.getByName("admin:directory").markTenant(tenantId, "deleting");
    return c.json(detail, 202);
  });
