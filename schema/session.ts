import * as v from "valibot";
import { AgentVersionRefSchema } from "./agent-binding.ts";
import { LaneInfoSchema } from "./lane.ts";
import { HarnessSettingsSchema } from "./settings.ts";
import { SessionStatsSchema } from "./usage.ts";

// The public session shapes (spec/API.md "Sessions"), shared by the session object, the SDK and
// the OpenAPI document (the types are inferred from the schemas, so the three cannot drift).

/** A branch: a named movable tip into the session's tree (`POST …/branches` answers it). */
export const BranchSchema = v.object({ name: v.string(), tipId: v.nullable(v.string()) });
export type Branch = v.InferOutput<typeof BranchSchema>;

/** A branch in a listing: `lane` says whether a lane is bound to it. */
export const BranchListingSchema = v.object({ ...BranchSchema.entries, lane: v.boolean() });
export type BranchListing = v.InferOutput<typeof BranchListingSchema>;

/**
 * The public Session. It embeds the first page of its branches and of its lanes (by name, as many
 * as `GET …/branches` and `GET …/lanes` answer by default); a non-null `branchesNextCursor` /
 * `lanesNextCursor` continues that listing with `?cursor=`.
 */
export const SessionSchema = v.object({
  id: v.string(),
  tenantId: v.string(),
  name: v.nullable(v.string()),
  createdAt: v.number(),
  parentSessionId: v.optional(v.string()),
  /** Up to 16 string keys to string values (`{}` when none): who and what the session belongs to. */
  metadata: v.record(v.string(), v.string()),
  /** The agent version the session is bound to (absent: none). */
  agent: v.optional(AgentVersionRefSchema),
  stats: SessionStatsSchema,
  settings: HarnessSettingsSchema,
  branches: v.array(BranchListingSchema),
  branchesNextCursor: v.nullable(v.string()),
  lanes: v.array(LaneInfoSchema),
  lanesNextCursor: v.nullable(v.string()),
});
export type Session = v.InferOutput<typeof SessionSchema>;

/**
 * What `POST /v1/sessions` answers: the Session and, when the creation defined http tools, their
 * signing secrets by tool name — shown this once, never again.
 */
export const CreatedSessionSchema = v.object({ ...SessionSchema.entries, toolSecrets: v.optional(v.record(v.string(), v.string())) });
export type CreatedSession = v.InferOutput<typeof CreatedSessionSchema>;

/** `GET|PUT …/entries/{entryId}/label`: `label` null when the entry has none. */
export const EntryLabelSchema = v.object({ entryId: v.string(), label: v.nullable(v.string()) });

/** `PUT …/skills/{name}` and `PUT …/templates/{name}`. */
export const ResourceNamedSchema = v.object({ name: v.string() });
