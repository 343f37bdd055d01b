import { IdSchema, SESSION_RETENTION_DAYS_MAX } from "../../schema/api.ts";
import { DeleteSessionsAnswerSchema, TenantDetailSchema } from "../../schema/data-lifecycle.ts";
import { MetadataFilterQuerySchema } from "../../schema/session-search.ts";
import type { CatalogRoute } from "./catalog-types.ts";

// Deletion in the background (docs/data.md "Deleting data"): one end user's sessions, a whole tenant.
export const dataLifecycleCatalog: readonly CatalogRoute[] = [
  {
    method: "delete", path: "/v1/sessions", operationId: "deleteSessionsByMetadata", tag: "Sessions", auth: "tenant",
    summary: "Delete the sessions holding metadata pairs (in the background)",
    description:
      "At least one `metadata.<key>=<value>` filter (the syntax of `GET /v1/sessions`; the sessions holding every pair match), else 400. Answers 202 `{ matched }`: the matching sessions leave listings and searches at once and are deleted in the background, a bounded batch at a time (usually within seconds); until its turn, a matched session still answers `GET /v1/sessions/{sid}`, and a direct `DELETE /v1/sessions/{sid}` deletes it at once. A repeat matches only what is still listed.",
    queryPatterns: [{ name: "metadata.{key}", description: "`metadata.<key>=<value>`: sessions whose metadata maps `<key>` to exactly `<value>`.", schema: MetadataFilterQuerySchema }],
    responses: { 202: { description: "`{ matched }`", schema: DeleteSessionsAnswerSchema } },
    errors: [],
  },
  {
    method: "get", path: "/v1/admin/tenants/{tenantId}", operationId: "getTenant", tag: "Admin", auth: "admin",
    summary: "A tenant, and its deletion's progress",
    description: "`{ id, name, createdAt, status }`; while the tenant is being deleted, `status: \"deleting\"` and `deletion: { startedAt, sessionsTotal, sessionsDeleted, sessionsRemaining }`. 404 once the deletion is complete.",
    pathParams: { tenantId: IdSchema },
    responses: { 200: { description: "The tenant", schema: TenantDetailSchema } },
    errors: ["NotFound"],
  },
  {
    method: "delete", path: "/v1/admin/tenants/{tenantId}", operationId: "deleteTenant", tag: "Admin", auth: "admin",
    summary: "Delete a tenant and all of its data (in the background)",
    description:
      "Answers 202 with the tenant as `GET` shows it. At once: the tenant is marked `deleting`, its keys (and the browser tokens they minted) are refused within 5 s everywhere (at once by the worker instance that answers), its watch sockets are closed (1008), and nothing new can be created for it (`TenantDeleting`). Then every session is deleted in the background, a bounded batch per tick, and finally the tenant's keys, agents, tools, webhooks, index and usage. Its id stays reserved: creating a tenant with it answers 409 `TenantExists`. A repeat answers 202 with the progress until the deletion is complete, then 404.",
    pathParams: { tenantId: IdSchema },
    responses: { 202: { description: "The tenant, `status: \"deleting\"`, with its progress", schema: TenantDetailSchema } },
    errors: ["NotFound"],
  },
];

/** The retention setting's words, shared by the quota routes' descriptions. */
export const RETENTION_DESCRIPTION = `\`sessionRetentionDays\` (1–${SESSION_RETENTION_DAYS_MAX}, null: kept for ever, the default): sessions idle that long (no creation, settled operation or PATCH since) are deleted by the minute cron, which sweeps each tenant with a retention about hourly.`;
