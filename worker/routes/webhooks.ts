import { Hono } from "hono";
import { secretsKeyProblem } from "../../secrets/secret-box.ts";
import { PageQuerySchema } from "../../schema/api.ts";
import { egressDetails, egressProblem } from "../../schema/egress-policy.ts";
import { CreateWebhookSchema, PatchWebhookSchema, WebhookIdSchema } from "../../schema/webhooks.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { fail, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { idempotent, replayInstead } from "../middleware/idempotency.ts";
import { jsonBody, pathParam, queryParams } from "../validate.ts";

/** Deliveries listed per page when the query names no `limit`. */
const DEFAULT_DELIVERY_PAGE = 50;

/**
 * The tenant's webhook endpoints (docs/webhooks.md): signed POSTs when its operations settle,
 * delivered from the TenantObject's durable outbox. The signing secret is answered once, by the
 * creation. Mounted at /v1 beside other sub-apps, so authentication is per route.
 */
export const webhookRoutes = new Hono<AppEnv>()
  // Idempotency-Key (D15), remembered by the tenant's object; a replay never shows the secret again.
  .post("/webhooks", requireTenant, idempotent((c) => tenantStub(c.env, c.get("caller").tenantId)), async (c) => {
    const { url, events } = await jsonBody(c, CreateWebhookSchema);
    // The egress policy of every outbound URL: https to a public host (loopback http in local development only).
    const problem = egressProblem(url, c.env.LOCAL_DEV === "on");
    if (problem) throw fail("InvalidWebhookUrl", problem.message, egressDetails(problem));
    // A deployment without the secret can seal no signing secret: answered before the tenant's object is asked.
    const unconfigured = secretsKeyProblem(c.env.SECRETS_KEY);
    if (unconfigured) throw fail("NotConfigured", unconfigured, { secret: "SECRETS_KEY" });
    const { tenantId } = c.get("caller");
    const created = replyValue(await tenantStub(c.env, tenantId).createWebhook(url, events));
    replayInstead(c, 409, {
      error: {
        code: "KeySecretNotReplayed",
        message: `Webhook ${created.id} was created by the first request with this Idempotency-Key; its secret was shown once and is not stored. Delete the endpoint and register it again if the secret was lost.`,
        details: { webhookId: created.id },
      },
    });
    return c.json(created, 201);
  })
  .get("/webhooks", requireTenant, async (c) => {
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).listWebhooks()));
  })
  // `{ enabled?, events? }`: re-enabling is how a tenant resumes an endpoint the service disabled for failing.
  .patch("/webhooks/:id", requireTenant, async (c) => {
    const id = pathParam(c, "id", WebhookIdSchema);
    const patch = await jsonBody(c, PatchWebhookSchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).patchWebhook(id, patch)));
  })
  .delete("/webhooks/:id", requireTenant, async (c) => {
    const id = pathParam(c, "id", WebhookIdSchema);
    replyValue(await tenantStub(c.env, c.get("caller").tenantId).deleteWebhook(id));
    return c.body(null, 204);
  })
  .get("/webhooks/:id/deliveries", requireTenant, async (c) => {
    const id = pathParam(c, "id", WebhookIdSchema);
    const { limit, cursor } = queryParams(c, PageQuerySchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).webhookDeliveries(id, limit ?? DEFAULT_DELIVERY_PAGE, cursor)));
  });
