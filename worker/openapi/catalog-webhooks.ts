import * as v from "valibot";
import { PageQuerySchema, pageSchema } from "../../schema/api.ts";
import {
  CreatedWebhookSchema,
  CreateWebhookSchema,
  MAX_WEBHOOK_ENDPOINTS,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
  WebhookIdSchema,
} from "../../schema/webhooks.ts";
import type { CatalogRoute } from "./catalog-types.ts";

// Webhook routes: worker/routes/webhooks.ts (docs/webhooks.md).

const ID = { id: WebhookIdSchema };

export const webhookCatalog: readonly CatalogRoute[] = [
  {
    method: "post", path: "/v1/webhooks", operationId: "createWebhook", tag: "Tenant", auth: "tenant",
    summary: "Register a webhook endpoint",
    description:
      `The endpoint receives a signed POST for each event it subscribes to (\`operation.settled\`, \`operation.suspended\`). \`url\`: https (in local development also http on localhost, 127.0.0.1 or [::1]; 422 \`InvalidWebhookUrl\` otherwise), at most 2,048 characters. The answer holds the signing \`secret\` (\`whsec_…\`) this once; it is stored encrypted and never shown again. At most ${MAX_WEBHOOK_ENDPOINTS} endpoints per tenant (422 \`LimitExceeded\`). A service without the encryption secret \`SECRETS_KEY\` answers 503 \`NotConfigured\`. A repeat with the same \`Idempotency-Key\` answers 409 \`KeySecretNotReplayed\` with \`details.webhookId\`: the endpoint exists, its secret is not shown again.`,
    body: CreateWebhookSchema, example: { url: "https://example.com/hooks/agent", events: ["operation.settled"] }, idempotent: true,
    responses: { 201: { description: "`{ id, url, events, createdAt, secret }`", schema: CreatedWebhookSchema } },
    errors: ["InvalidWebhookUrl", "LimitExceeded", "NotConfigured", "KeySecretNotReplayed"],
  },
  {
    method: "get", path: "/v1/webhooks", operationId: "listWebhooks", tag: "Tenant", auth: "tenant",
    summary: "The tenant's webhook endpoints", description: "Oldest first; never a secret.",
    responses: { 200: { description: "`{ items: [{ id, url, events, createdAt }] }`", schema: v.object({ items: v.array(WebhookEndpointSchema) }) } },
    errors: [],
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
      "`{ items: [{ eventId, type, status, attempts, lastStatusCode?, lastError?, nextAttemptAt, createdAt, lastAttemptAt?, deliveredAt? }], nextCursor }` in creation order. `status`: `pending` (retried with backoff for at least 24 hours after the first attempt), `delivered` (the endpoint answered 2xx) or `failed`. The log keeps every pending delivery and the latest 100 finished ones. `limit` 1–1000, default 50.",
    pathParams: ID, query: PageQuerySchema,
    responses: { 200: { description: "A page of deliveries", schema: pageSchema(WebhookDeliverySchema) } },
    errors: ["NotFound"],
  },
];
