import * as v from "valibot";
import { PageQuerySchema, pageSchema } from "../../schema/api.ts";
import {
  CreatedWebhookSchema,
  CreateWebhookSchema,
  MAX_WEBHOOK_ENDPOINTS,
  MAX_WEBHOOKS_PER_HOST,
  PatchWebhookSchema,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
  WebhookIdSchema,
} from "../../schema/webhooks.ts";
import { DISABLE_AFTER_FAILED_ATTEMPTS, DISABLE_AFTER_FAILING_MS } from "../../durable-objects/tenant/webhooks/webhook-schedule.ts";
import type { CatalogRoute } from "./catalog-types.ts";

// Webhook routes: worker/routes/webhooks.ts (docs/webhooks.md).

const ID = { id: WebhookIdSchema };
const ENDPOINT = "`{ id, url, events, createdAt, status: \"enabled\" | \"disabled\", disabledReason?, disabledAt? }`";
const DISABLING = `An endpoint whose every attempt failed for ${DISABLE_AFTER_FAILING_MS / 3_600_000} hours, or whose last ${DISABLE_AFTER_FAILED_ATTEMPTS} attempts in a row failed, is disabled (\`status: "disabled"\` with \`disabledReason\`): its pending deliveries are given up and it is sent nothing until the tenant re-enables it with \`PATCH /v1/webhooks/{id}\` \`{ "enabled": true }\`.`;

export const webhookCatalog: readonly CatalogRoute[] = [
  {
    method: "post", path: "/v1/webhooks", operationId: "createWebhook", tag: "Tenant", auth: "tenant",
    summary: "Register a webhook endpoint",
    description:
      `The endpoint receives a signed POST for each event it subscribes to (\`operation.settled\`, \`operation.suspended\`, \`schedule.fired\`, \`schedule.skipped\`). \`url\`: https (in local development also http on localhost, 127.0.0.1 or [::1]; 422 \`InvalidWebhookUrl\` otherwise), at most 2,048 characters. The answer holds the signing \`secret\` (\`whsec_…\`) this once; it is stored encrypted and never shown again. One endpoint per URL: a second registration of the same URL is 409 \`WebhookExists\` with \`details.webhookId\` naming the first. At most ${MAX_WEBHOOK_ENDPOINTS} endpoints per tenant and ${MAX_WEBHOOKS_PER_HOST} per destination host (422 \`LimitExceeded\`, \`details.resource\` \`webhooks\` or \`webhooks_per_host\`). A service without the encryption secret \`SECRETS_KEY\` answers 503 \`NotConfigured\`. A repeat with the same \`Idempotency-Key\` answers 409 \`KeySecretNotReplayed\` with \`details.webhookId\`: the endpoint exists, its secret is not shown again.`,
    body: CreateWebhookSchema, example: { url: "https://example.com/hooks/agent", events: ["operation.settled"] }, idempotent: true,
    responses: { 201: { description: "`{ id, url, events, createdAt, status, secret }`", schema: CreatedWebhookSchema } },
    errors: ["InvalidWebhookUrl", "WebhookExists", "LimitExceeded", "NotConfigured", "KeySecretNotReplayed"],
  },
  {
    method: "get", path: "/v1/webhooks", operationId: "listWebhooks", tag: "Tenant", auth: "tenant",
    summary: "The tenant's webhook endpoints", description: `Oldest first; never a secret. ${DISABLING}`,
    responses: { 200: { description: `\`{ items: [${ENDPOINT}] }\``, schema: v.object({ items: v.array(WebhookEndpointSchema) }) } },
    errors: [],
  },
  {
    method: "patch", path: "/v1/webhooks/{id}", operationId: "updateWebhook", tag: "Tenant", auth: "tenant",
    summary: "Re-enable, disable or resubscribe a webhook endpoint",
    description:
      `\`enabled: true\` re-enables a disabled endpoint with a fresh count of failures (on an enabled endpoint it changes nothing); \`enabled: false\` disables it and gives up its pending deliveries; \`events\` replaces its subscriptions. Events that happened while it was disabled are not sent later. ${DISABLING}`,
    pathParams: ID, body: PatchWebhookSchema, example: { enabled: true },
    responses: { 200: { description: `The endpoint: ${ENDPOINT}`, schema: WebhookEndpointSchema } },
    errors: ["NotFound"],
  },
  {
    method: "delete", path: "/v1/webhooks/{id}", operationId: "deleteWebhook", tag: "Tenant", auth: "tenant",
    summary: "Delete a webhook endpoint", description: "Its pending deliveries are dropped and its delivery log with them.",
    pathParams: ID,
    responses: { 204: { description: "Deleted", content: "none" } },
    errors: ["NotFound"],
  },
  {
    method: "get", path: "/v1/webhooks/{id}/deliveries", operationId: "listWebhookDeliveries", tag: "Tenant", auth: "tenant",
    summary: "An endpoint's delivery log",
    description:
      "`{ items: [{ eventId, type, status, attempts, lastStatusCode?, lastError?, nextAttemptAt, createdAt, lastAttemptAt?, deliveredAt? }], nextCursor }` in creation order. `status`: `pending` (retried after 30 s, then twice as long after each failure up to 1 h, for at most 24 hours after the first attempt), `delivered` (the endpoint answered 2xx) or `failed` (given up: out of retries, the backlog was full, or the endpoint was disabled). The log keeps every pending delivery and the latest 100 finished ones. `limit` 1–1000, default 50.",
    pathParams: ID, query: PageQuerySchema,
    responses: { 200: { description: "A page of deliveries", schema: pageSchema(WebhookDeliverySchema) } },
    errors: ["NotFound"],
  },
];
