import * as v from "valibot";
import { UsageTotalsSchema } from "../../schema/usage.ts";
import { JsonObjectSchema } from "../../schema/json.ts";
import {
  CreatedKeySchema,
  CreateKeySchema,
  CreateTenantSchema,
  IdSchema,
  KeyInfoSchema,
  PageQuerySchema,
  pageSchema,
  TenantQuotasPatchSchema,
  TenantQuotasSchema,
  TenantSummarySchema,
} from "../../schema/api.ts";
import { DefaultModelSchema, ModelInfoSchema, ProviderIdSchema, ProviderKeyInfoSchema, PutProviderSchema } from "../../schema/providers.ts";
import { agentCatalog } from "./catalog-agents.ts";
import { aiSdkCatalog } from "./catalog-ai-sdk.ts";
import { dataLifecycleCatalog, RETENTION_DESCRIPTION } from "./catalog-data-lifecycle.ts";
import { tenantToolCatalog } from "./catalog-tenant-tools.ts";
import { laneCatalog } from "./catalog-lanes.ts";
import { sessionCatalog } from "./catalog-sessions.ts";
import { dataCatalog } from "./catalog-data.ts";
import { mcpCatalog } from "./catalog-mcp.ts";
import { toolCatalog } from "./catalog-tools.ts";
import { webhookCatalog } from "./catalog-webhooks.ts";
import { scheduleCatalog } from "./catalog-schedules.ts";
import type { CatalogRoute } from "./catalog-types.ts";
import { HealthSchema } from "./responses.ts";

/**
 * Every route the front worker serves, declaratively: method, OpenAPI path, auth, and the very
 * schema objects the routes validate path, query and body with (imported from schema/, never
 * copied). document.ts builds /openapi.json from this list; test/api/openapi.test.ts fails when a
 * route the Hono app serves has no entry here, or an entry names a route that is not served.
 */
const MeSchema = v.object({ tenantId: v.string(), keyId: v.string(), defaultModel: v.nullable(DefaultModelSchema), usage: UsageTotalsSchema });

export const CATALOG: readonly CatalogRoute[] = [
  {
    method: "get", path: "/health", operationId: "health", tag: "Meta", auth: "none",
    summary: "Liveness",
    responses: { 200: { description: "`{ status: \"ok\" }`", schema: HealthSchema } },
    errors: [],
  },
  {
    method: "get", path: "/openapi.json", operationId: "openApiDocument", tag: "Meta", auth: "none",
    summary: "This OpenAPI 3.1 document", description: "Generated from the route catalog and the valibot schemas the routes validate with.",
    responses: { 200: { description: "The OpenAPI document", schema: JsonObjectSchema } },
    errors: [],
  },
  {
    method: "get", path: "/docs", operationId: "docs", tag: "Meta", auth: "none",
    summary: "A browsable reference of this document",
    responses: { 200: { description: "An HTML page", content: "html", schema: v.string() } },
    errors: [],
  },
  {
    method: "post", path: "/v1/admin/tenants", operationId: "createTenant", tag: "Admin", auth: "admin",
    summary: "Create a tenant", description: "`id` defaults to a fresh `t_…` id. The tenant joins the admin's tenant list. The id of a deleted tenant stays reserved (409 `TenantExists`).",
    body: CreateTenantSchema, example: { name: "Acme" }, idempotent: true,
    responses: { 201: { description: "`{ id, name, createdAt }`", schema: TenantSummarySchema } },
    errors: ["TenantExists"],
  },
  {
    method: "get", path: "/v1/admin/tenants", operationId: "listTenants", tag: "Admin", auth: "admin",
    summary: "List the tenants", description: "`{ items: [{ id, name, createdAt, status? }], nextCursor }` in creation order; a tenant being deleted has `status: \"deleting\"`, a deleted one is not listed; `limit` 1–1000, default 50.",
    query: PageQuerySchema,
    responses: { 200: { description: "A page of tenants", schema: pageSchema(TenantSummarySchema) } },
    errors: [],
  },
  {
    method: "post", path: "/v1/admin/tenants/{tenantId}/keys", operationId: "createKey", tag: "Admin", auth: "admin",
    summary: "Create an API key",
    description:
      "The key is shown once and stored nowhere (only its hash is kept). A repeat with the same `Idempotency-Key` answers 409 `KeySecretNotReplayed` with `details.keyId`: the key exists, its secret is not shown again (revoke it if it was lost).",
    pathParams: { tenantId: IdSchema }, body: CreateKeySchema, example: { name: "ci" }, idempotent: true,
    responses: { 201: { description: "`{ keyId, key }`", schema: CreatedKeySchema } },
    errors: ["NotFound", "KeySecretNotReplayed", "TenantDeleting"],
  },
  {
    method: "get", path: "/v1/admin/tenants/{tenantId}/keys", operationId: "listKeys", tag: "Admin", auth: "admin",
    summary: "List a tenant's API keys",
    description:
      "`{ items: [{ keyId, name, createdAt, lastUsedAt?, revokedAt? }], nextCursor }` in creation order, revoked keys included; never a secret. `lastUsedAt` is recorded at most once a minute per key. `limit` 1–1000, default 50.",
    pathParams: { tenantId: IdSchema }, query: PageQuerySchema,
    responses: { 200: { description: "A page of keys", schema: pageSchema(KeyInfoSchema) } },
    errors: ["NotFound"],
  },
  {
    method: "delete", path: "/v1/admin/tenants/{tenantId}/keys/{keyId}", operationId: "revokeKey", tag: "Admin", auth: "admin",
    summary: "Revoke an API key", description: "The key is refused within 5 s everywhere: at once by the worker instance that answers this request and by the routes that accept an operation (their reservation checks the key); elsewhere a verified key is trusted for at most 5 s. Its open watch sockets are closed (1008) before the answer.",
    pathParams: { tenantId: IdSchema, keyId: IdSchema },
    responses: { 204: { description: "Revoked", content: "none" } },
    errors: ["NotFound"],
  },
  {
    method: "get", path: "/v1/admin/tenants/{tenantId}/quotas", operationId: "getQuotas", tag: "Admin", auth: "admin",
    summary: "A tenant's quotas", pathParams: { tenantId: IdSchema },
    description: `\`deploymentKeys\`: whether the tenant may use the service's own provider keys (default true). ${RETENTION_DESCRIPTION}`,
    responses: { 200: { description: "`{ requestsPerMinute, maxOpenOperations, maxSchedules, deploymentKeys, sessionRetentionDays }`", schema: TenantQuotasSchema } },
    errors: ["NotFound"],
  },
  {
    method: "patch", path: "/v1/admin/tenants/{tenantId}/quotas", operationId: "setQuotas", tag: "Admin", auth: "admin",
    summary: "Set a tenant's quotas",
    description: `Requests beyond \`requestsPerMinute\` in a minute answer 429 \`RateLimited\` with \`Retry-After\`; accepting an operation while \`maxOpenOperations\` are open (accepted, not settled) answers 429 \`RateLimited\` with \`details.quota: "maxOpenOperations"\`. Creating a schedule while the tenant's sessions hold \`maxSchedules\` (default 1,000) answers 422 \`LimitExceeded\` with \`details.resource: "schedules_per_tenant"\`. \`deploymentKeys: false\` stops the tenant from using the service's own provider keys (its own keys still work), effective on its next model request. ${RETENTION_DESCRIPTION} A tenant being deleted answers 409 \`TenantDeleting\`.`,
    pathParams: { tenantId: IdSchema }, body: TenantQuotasPatchSchema, example: { requestsPerMinute: 600 },
    responses: { 200: { description: "`{ requestsPerMinute, maxOpenOperations, maxSchedules, deploymentKeys, sessionRetentionDays }`", schema: TenantQuotasSchema } },
    errors: ["NotFound", "TenantDeleting"],
  },
  {
    method: "get", path: "/v1/me", operationId: "getMe", tag: "Tenant", auth: "tenant",
    summary: "Who the caller is, the tenant's default model and its usage totals",
    description:
      "`defaultModel` (null until set) is the model of lanes created without one in sessions without a default of their own. `usage` sums the usage ledgers of the tenant's sessions; rows are forwarded asynchronously after each commit (at most once), so totals can lag a moment behind a run. Each request's usage is bounded (tokens: integers up to 10^12; cost numbers: up to 10^9), so totals stay finite.",
    responses: { 200: { description: "`{ tenantId, keyId, defaultModel, usage }`", schema: MeSchema } },
    errors: [],
  },
  {
    method: "put", path: "/v1/me/default-model", operationId: "putDefaultModel", tag: "Tenant", auth: "tenant",
    summary: "Set the tenant's default model of new lanes",
    description:
      "A lane created without a `model` gets its session's `settings.defaultModel`, else this, else the first model of `GET /v1/models`. Only a model the tenant can use now is accepted; if it becomes unusable later (its key deleted), creating a lane without a model is 422 `UnknownModel` naming it.",
    body: DefaultModelSchema, example: { provider: "openai", modelId: "gpt-5-mini" },
    responses: { 200: { description: "`{ provider, modelId }`", schema: DefaultModelSchema } },
    errors: ["UnknownModel"],
  },
  {
    method: "delete", path: "/v1/me/default-model", operationId: "deleteDefaultModel", tag: "Tenant", auth: "tenant",
    summary: "Remove the tenant's default model",
    description: "Idempotent. New lanes without a model then get their session's default, else the first model of `GET /v1/models`.",
    responses: { 204: { description: "Removed", content: "none" } },
    errors: [],
  },
  {
    method: "get", path: "/v1/models", operationId: "listModels", tag: "Tenant", auth: "tenant",
    summary: "The models this tenant can use",
    description:
      "The catalog of every provider the tenant has credentials for: its own keys (`PUT /v1/providers/{provider}`), the service's keys when it may use them, and the scripted models when the service offers them. `cost` is dollars per million tokens.",
    responses: { 200: { description: "`[{ provider, modelId, name, contextWindow, maxTokens, input, reasoning, cost }]`", schema: v.array(ModelInfoSchema) } },
    errors: [],
  },
  {
    method: "get", path: "/v1/providers", operationId: "listProviders", tag: "Tenant", auth: "tenant",
    summary: "The providers this tenant has credentials for",
    description:
      "The tenant's own keys (`source: \"tenant\"`, with the key's last four characters as `keyHint` and the `baseUrl` if set), then the service's providers the tenant may use and has no key of its own for (`source: \"deployment\"`). A key is never shown.",
    responses: { 200: { description: "`[{ provider, source, keyHint?, baseUrl? }]`", schema: v.array(ProviderKeyInfoSchema) } },
    errors: [],
  },
  {
    method: "put", path: "/v1/providers/{provider}", operationId: "putProviderKey", tag: "Tenant", auth: "tenant",
    summary: "Set the tenant's own key for a provider",
    description:
      "Stored encrypted, never returned, used for this tenant's requests to the provider in place of the service's key. `baseUrl` points the provider at another host (a proxy or a compatible server): https, or in local development also http on localhost, 127.0.0.1 or [::1] (422 `InvalidBaseUrl` otherwise). Replaces an existing key. A service whose operator has not set the encryption secret `SECRETS_KEY` (at least 32 characters) stores no key: 503 `NotConfigured`.",
    pathParams: { provider: ProviderIdSchema }, body: PutProviderSchema, example: { apiKey: "sk-your-own-key" },
    responses: { 200: { description: "`{ provider, source: \"tenant\", keyHint, baseUrl? }`", schema: ProviderKeyInfoSchema } },
    errors: ["UnknownProvider", "InvalidBaseUrl", "NotConfigured"],
  },
  {
    method: "delete", path: "/v1/providers/{provider}", operationId: "deleteProviderKey", tag: "Tenant", auth: "tenant",
    summary: "Delete the tenant's own key for a provider",
    description: "Idempotent. The provider is then served by the service's key if the tenant may use it, otherwise not at all.",
    pathParams: { provider: ProviderIdSchema },
    responses: { 204: { description: "Deleted", content: "none" } },
    errors: ["UnknownProvider"],
  },
  ...sessionCatalog,
  ...dataCatalog,
  ...laneCatalog,
  ...aiSdkCatalog,
  ...toolCatalog,
  ...webhookCatalog,
  ...scheduleCatalog,
  ...agentCatalog,
  ...tenantToolCatalog,
  ...mcpCatalog,
  ...dataLifecycleCatalog,
];
