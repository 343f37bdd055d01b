import * as v from "valibot";
import { AgentReferenceSchema, AgentVersionRefSchema } from "./agent-binding.ts";
import { HarnessResourcesSchema, PromptTemplateSchema, SkillSchema } from "./settings.ts";
import { HarnessSettingsPatchSchema } from "./settings-patch.ts";
import { SessionMetadataSchema } from "./session-metadata.ts";
import { ToolDefinitionsByNameSchema } from "./tools.ts";

// Request bodies and parameters of the public API (spec/API.md). The front worker validates with
// these before any object is touched; types are inferred here once.

/** Tenant, session and key ids: no separator can be injected into `${tenantId}:${sessionId}`. */
export const IdSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/, "Ids are 1–64 characters of A–Z a–z 0–9 _ -"));

/** An entry's label, set by `PUT …/entries/{id}/label` or by a navigation's `label`: 1–1000 characters. */
export const EntryLabelTextSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(1000));

/**
 * A new session's id: an id, and not `import`, whose path `/v1/sessions/import` is the import route
 * (docs/data.md): a session of that name could never be read.
 */
export const NewSessionIdSchema = v.pipe(v.string(), v.regex(/^(?!import$)[A-Za-z0-9_-]{1,64}$/, "Session ids are 1–64 characters of A–Z a–z 0–9 _ -, and not `import` (the import route)"));

export const CreateTenantSchema = v.optional(
  v.strictObject({
    id: v.optional(IdSchema),
    name: v.optional(v.pipe(v.string(), v.maxLength(200))),
  }),
  {},
);
export type CreateTenant = v.InferOutput<typeof CreateTenantSchema>;

export const CreateKeySchema = v.optional(v.strictObject({ name: v.optional(v.pipe(v.string(), v.maxLength(200))) }), {});

export const CreateSessionSchema = v.optional(
  v.strictObject({
    id: v.optional(NewSessionIdSchema),
    name: v.optional(v.pipe(v.string(), v.maxLength(500))),
    settings: v.optional(HarnessSettingsPatchSchema),
    resources: v.optional(HarnessResourcesSchema),
    /** Tool definitions by name, as `PUT …/tools/{name}` takes them. */
    tools: v.optional(ToolDefinitionsByNameSchema),
    /** Up to 16 string keys to string values (schema/session-metadata.ts), searchable with `GET /v1/sessions?metadata.<key>=`. */
    metadata: v.optional(SessionMetadataSchema),
    /**
     * `"<id>"` or `"<id>@<version>"`: the session copies that agent version (settings, resources,
     * tools, MCP servers) and lane `main` takes its lane configuration; the fields given beside it
     * override the version's for this session.
     */
    agent: v.optional(AgentReferenceSchema),
  }),
  {},
);
export type CreateSession = v.InferOutput<typeof CreateSessionSchema>;

/** Page sizes of every listing: default 50, at most 1000. */
export const PAGE_LIMIT_DEFAULT = 50;
export const PAGE_LIMIT_MAX = 1000;

/** `?limit=` of every listing: an integer from 1 to PAGE_LIMIT_MAX, default PAGE_LIMIT_DEFAULT. */
export const LimitQuerySchema = v.optional(
  v.pipe(
    v.string(),
    v.regex(/^\d{1,4}$/, `limit is an integer from 1 to ${PAGE_LIMIT_MAX}`),
    v.transform(Number),
    v.minValue(1, "limit is at least 1"),
    v.maxValue(PAGE_LIMIT_MAX, `limit is at most ${PAGE_LIMIT_MAX}`),
  ),
  String(PAGE_LIMIT_DEFAULT),
);

export const PageQuerySchema = v.object({
  limit: LimitQuerySchema,
  cursor: v.optional(v.pipe(v.string(), v.maxLength(200))),
});

export { ResourceNameSchema } from "./settings.ts";
export const PutSkillSchema = SkillSchema;
export const PutTemplateSchema = PromptTemplateSchema;

/** The longest retention an administrator may set (ten years). */
export const SESSION_RETENTION_DAYS_MAX = 3650;

/** Per-tenant quotas an administrator may set (omitted fields keep their value). */
export const TenantQuotasPatchSchema = v.strictObject({
  requestsPerMinute: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(1_000_000))),
  maxOpenOperations: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(10_000))),
  maxSchedules: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(1_000_000))),
  /** Whether the tenant may use the deployment's own provider keys (default: it may). */
  deploymentKeys: v.optional(v.boolean()),
  /** Sessions idle longer than this many days are deleted by the cron; null keeps them for ever. */
  sessionRetentionDays: v.optional(v.nullable(v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(SESSION_RETENTION_DAYS_MAX)))),
});

/** `GET|PATCH /v1/admin/tenants/{tenantId}/quotas`: a tenant's quotas as they apply now. */
export const TenantQuotasSchema = v.object({
  requestsPerMinute: v.number(),
  /** Operations the tenant may have open (accepted, not yet settled) at once, across its sessions. */
  maxOpenOperations: v.number(),
  /** Schedules the tenant's sessions may hold together (default 1,000). */
  maxSchedules: v.number(),
  /** Whether the tenant may use the deployment's own provider keys. */
  deploymentKeys: v.boolean(),
  /** Days a session may stay idle before the cron deletes it; null: kept for ever. */
  sessionRetentionDays: v.nullable(v.number()),
});
export type TenantQuotas = v.InferOutput<typeof TenantQuotasSchema>;
export type TenantQuotasPatch = v.InferInput<typeof TenantQuotasPatchSchema>;

// Listings (answers): what a row of each listing holds.

/**
 * One row of `GET /v1/sessions`: kept in the tenant's index, so a listing reads one object
 * whatever its length. The name and metadata are the ones given at creation or by the last PATCH
 * (the index is updated before those answer); stats, settings, branches and lanes are in
 * `GET /v1/sessions/{sid}`.
 */
export const SessionSummarySchema = v.object({
  id: v.string(),
  name: v.nullable(v.string()),
  createdAt: v.number(),
  /** The session's metadata (`{}` when it has none). */
  metadata: v.record(v.string(), v.string()),
  /** The agent version the session is bound to (absent: none). */
  agent: v.optional(AgentVersionRefSchema),
});
export type SessionSummary = v.InferOutput<typeof SessionSummarySchema>;

/** One row of `GET /v1/admin/tenants`. */
export const TenantSummarySchema = v.object({
  id: v.string(),
  name: v.string(),
  createdAt: v.number(),
  /** Shown while the tenant is being deleted (docs/data.md "Deleting data"); a deleted tenant is not listed. */
  status: v.optional(v.picklist(["active", "deleting"])),
});
export type TenantSummary = v.InferOutput<typeof TenantSummarySchema>;

/** One row of `GET /v1/admin/tenants/{tenantId}/keys`: never a secret (only a hash is stored). */
export const KeyInfoSchema = v.object({
  keyId: v.string(),
  name: v.string(),
  createdAt: v.number(),
  /** Recorded at most once a minute per key: up to a minute behind the last request. */
  lastUsedAt: v.optional(v.number()),
  revokedAt: v.optional(v.number()),
});
export type KeyInfo = v.InferOutput<typeof KeyInfoSchema>;

/** `POST /v1/admin/tenants/{tenantId}/keys`: the key, shown this once (only its hash is stored). */
export const CreatedKeySchema = v.object({ keyId: v.string(), key: v.string() });

/** A page of any listing: `nextCursor` continues it (null at the end). */
export function pageSchema<T extends v.GenericSchema>(item: T) {
  return v.object({ items: v.array(item), nextCursor: v.nullable(v.string()) });
}
