import * as v from "valibot";
import { AgentReferenceSchema } from "./agent-binding.ts";
import { PageQuerySchema } from "./api.ts";
import { MetadataKeySchema, MetadataValueSchema, SESSION_METADATA_LIMITS } from "./session-metadata.ts";

// `GET /v1/sessions` (spec/API.md "Session metadata and search"): the page parameters, the order,
// and the filters, all answered from the tenant's index.

/** A creation time bound: milliseconds since the epoch, like a Session's `createdAt` (exclusive). */
const CreatedAtQuerySchema = v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, "a time in milliseconds since the epoch (an integer)"), v.transform(Number)));

/**
 * The named parameters of `GET /v1/sessions?limit&cursor&order&status&createdAfter&createdBefore`.
 * `metadata.<key>=<value>` parameters are read by `metadataFilters`; other unknown parameters are
 * ignored, as on every listing.
 */
export const SessionListQuerySchema = v.object({
  ...PageQuerySchema.entries,
  order: v.optional(v.picklist(["asc", "desc"]), "asc"),
  /** `active`: a lane of the session has an open operation in the tenant's ledger; `idle`: none. */
  status: v.optional(v.picklist(["idle", "active"])),
  createdAfter: CreatedAtQuerySchema,
  createdBefore: CreatedAtQuerySchema,
  /** `<id>`: sessions bound to any version of that agent; `<id>@<version>`: to that version. */
  agent: v.optional(AgentReferenceSchema),
});
export type SessionListOrder = "asc" | "desc";
export type SessionStatus = "idle" | "active";

/** The prefix of a metadata filter parameter: `metadata.<key>=<value>`. */
export const METADATA_FILTER_PREFIX = "metadata.";

/** The documented form of a metadata filter (one OpenAPI parameter stands for all of them). */
export const MetadataFilterQuerySchema = v.optional(MetadataValueSchema);

/**
 * The filters of a search, as the tenant's index takes them. `metadata` pairs in the order the
 * query gave them: the first is served by the index, the others are checked row by row.
 */
export interface SessionSearch {
  limit: number;
  cursor?: string;
  order: SessionListOrder;
  metadata: [key: string, value: string][];
  agent?: { id: string; version?: number };
  status?: SessionStatus;
  createdAfter?: number;
  createdBefore?: number;
}

/** A parameter the search refuses: `where` names it, `what` says why. */
export interface QueryProblem {
  where: string;
  what: string;
}

/**
 * The `metadata.<key>=<value>` pairs of a query (`all`: every value of each parameter, so a
 * repeated one is seen). At most 16 pairs (a session holds no more keys), each key given once,
 * keys and values as metadata takes them.
 */
export function metadataFilters(all: Record<string, string[]>): { ok: true; pairs: [string, string][] } | { ok: false; problem: QueryProblem } {
  const pairs: [string, string][] = [];
  for (const [name, values] of Object.entries(all)) {
    if (!name.startsWith(METADATA_FILTER_PREFIX)) continue;
    const key = name.slice(METADATA_FILTER_PREFIX.length);
    if (!v.is(MetadataKeySchema, key)) return { ok: false, problem: { where: name, what: "metadata keys are 1–64 characters of A–Z a–z 0–9 _ - ." } };
    if (values.length !== 1) return { ok: false, problem: { where: name, what: "each metadata key may be given once" } };
    const value = values[0] ?? "";
    if (!v.is(MetadataValueSchema, value)) return { ok: false, problem: { where: name, what: `metadata values are at most ${SESSION_METADATA_LIMITS.valueLength} characters` } };
    pairs.push([key, value]);
  }
  if (pairs.length > SESSION_METADATA_LIMITS.keys) {
    return { ok: false, problem: { where: "query", what: `at most ${SESSION_METADATA_LIMITS.keys} metadata filters` } };
  }
  return { ok: true, pairs };
}
