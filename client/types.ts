import type { Branch, BranchListing, CreatedSession, Session } from "../schema/session.ts";
import type * as v from "valibot";
import type { CreatedKeySchema, CreateSessionSchema } from "../schema/api.ts";
import type { CreateBranchSchema, NewBranchEntrySchema, PatchSessionSchema } from "../schema/api-sessions.ts";
import type { EntryType } from "../schema/entries.ts";
import type { JsonValue } from "../schema/json.ts";
import type { EnqueueSchema, LaneConfigPatchSchema, NewLaneEntrySchema, OperationRequestSchema, PromptConvenienceSchema, PutLaneSchema } from "../schema/lane-api.ts";
import type {
  AbortOutcome,
  AbortRequestResult,
  CancelQueuedResult,
  EntryPlacementSchema,
  LaneSnapshotAnswerSchema,
  AcceptedOperationSchema,
  Interrupted,
  OperationAdmission,
  OperationView,
  PendingRun,
  PromptAnswer,
  QueuedPrompt,
  QueuedSchema,
} from "../schema/lane-answers.ts";
import type { EntryLabelSchema } from "../schema/session.ts";
import type { LaneInfo, ModelIdentity, OperationResultRecord } from "../schema/lane.ts";
import type { DeferredHandle } from "../schema/messages.ts";
import type { Usage, UsageRow } from "../schema/usage.ts";

// Request and response shapes of the REST API. Requests are the inputs of the schemas the server
// validates with (schema/api*.ts, schema/lane-api.ts); responses reuse schema/ types and spell out
// the routes' own shapes (worker/routes/*.ts) where the server answers an ad-hoc object.

// ── Requests ────────────────────────────────────────────────────────────────────────────────────

export type CreateSessionBody = NonNullable<v.InferInput<typeof CreateSessionSchema>>;
export type PatchSessionBody = v.InferInput<typeof PatchSessionSchema>;
export type CreateBranchBody = v.InferInput<typeof CreateBranchSchema>;
/** `{ message }` or `{ customType, data? }`. */
export type NewBranchEntryBody = v.InferInput<typeof NewBranchEntrySchema>;
export type NewLaneEntryBody = v.InferInput<typeof NewLaneEntrySchema>;
export type LaneConfigPatchBody = v.InferInput<typeof LaneConfigPatchSchema>;
/** `PUT …/lanes/{lane}`: where a new lane starts and its configuration (both used only on creation). */
export type PutLaneBody = NonNullable<v.InferInput<typeof PutLaneSchema>>;
export type EnqueueBody = v.InferInput<typeof EnqueueSchema>;
export type QueueKind = EnqueueBody["kind"];
export type OperationRequestBody = v.InferInput<typeof OperationRequestSchema>;
export type PromptBody = v.InferInput<typeof PromptConvenienceSchema>;
/** What a prompt may be: text, one message, or several messages. */
export type PromptInput = PromptBody["prompt"];

export interface PageQuery {
  /** 1–1000, default 50. */
  limit?: number;
  /** `nextCursor` of the previous page, unchanged (same filters and order). */
  cursor?: string;
}

export interface SessionsQuery extends PageQuery {
  /** `asc` (creation order, the default) or `desc` (newest first). */
  order?: "asc" | "desc";
  /** Sessions bound to an agent: `"<id>"` (any of its versions) or `"<id>@<version>"`. */
  agent?: string;
  /** Sessions whose metadata holds every one of these pairs exactly (`metadata.<key>=<value>`; at most 16). */
  metadata?: Record<string, string>;
  /** `active`: a lane has an open operation (as the tenant's ledger knows it); `idle`: none. */
  status?: "idle" | "active";
  /** Created strictly after this time (ms since the epoch). */
  createdAfter?: number;
  /** Created strictly before this time (ms since the epoch). */
  createdBefore?: number;
}

export interface EntriesQuery extends PageQuery {
  type?: EntryType;
  customType?: string;
  order?: "asc" | "desc";
}

export interface BranchEntriesQuery extends PageQuery {
  start?: string;
  stopAtType?: EntryType;
  stopAtId?: string;
  type?: EntryType;
  customType?: string;
  /** `desc` (newest first, the default) or `asc` (oldest first), as on every listing. */
  order?: "asc" | "desc";
}

export interface ListQuery extends PageQuery {
  order?: "asc" | "desc";
}

export interface UsageQuery {
  fromSeq?: number;
  limit?: number;
}

// ── Responses ───────────────────────────────────────────────────────────────────────────────────

/** One page of a listing; `nextCursor` is null on the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface Tenant {
  id: string;
  name: string;
  createdAt: number;
}

/** `POST /v1/admin/tenants/{tenantId}/keys`: the key is shown once. */
export type CreatedKey = v.InferOutput<typeof CreatedKeySchema>;

/** `GET /v1/me`. */
export interface Me {
  tenantId: string;
  keyId: string;
  /** The model of lanes created without one, in sessions without a default of their own; null: none. */
  defaultModel: ModelIdentity | null;
  /** The tenant's usage totals (forwarded asynchronously by its sessions, so they can lag a run). */
  usage: Usage;
}

/** One row of `GET /v1/models`. */
export interface ModelCatalogEntry {
  provider: string;
  modelId: string;
  /** The provider's display name of the model. */
  name: string;
  contextWindow: number;
  maxTokens: number;
  input: ("text" | "image")[];
  reasoning: boolean;
  /** Dollars per million tokens. */
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number };
}

/** `PUT …/entries/{entryId}/label`. */
export type LabelResult = v.InferOutput<typeof EntryLabelSchema>;

/** `GET …/usage`: rows with seq ≥ fromSeq; continue with `fromSeq: nextFromSeq` (null at the end). */
export interface UsagePage {
  rows: UsageRow[];
  totals: Usage;
  nextFromSeq: number | null;
}

/** `GET …/values/{namespace}/{key}`. */
export interface StoredValue<T extends JsonValue = JsonValue> {
  value: T;
  seq: number;
}

/** The session seq a write took (`PUT …/values/…`, `POST …/lists/…`). */
export interface SeqAck {
  seq: number;
}

export interface ListItem<T extends JsonValue = JsonValue> {
  seq: number;
  value: T;
}

/** `POST …/branches/{name}/entries`, `POST …/lanes/{lane}/entries`: `placed: false` when queued as a write. */
export type AppendedEntry = v.InferOutput<typeof EntryPlacementSchema>;

/** `PUT …/lanes/{lane}`: the lane, and whether this request created it (201) or it existed (200). */
export interface PutLaneResult {
  lane: LaneInfo;
  created: boolean;
}

/** `GET …/lanes/{lane}/snapshot`. */
export type LaneSnapshotAt = v.InferOutput<typeof LaneSnapshotAnswerSchema>;

/** `POST …/lanes/{lane}/queue`. */
export type EnqueuedItem = v.InferOutput<typeof QueuedSchema>;

// The operation answers, as the server types them (schema/lane-answers.ts).
export type { AbortOutcome, AbortRequestResult, CancelQueuedResult, Interrupted, OperationAdmission, OperationView, PendingRun, QueuedPrompt };

/**
 * What the waiting conveniences (`prompt`, `resume`) answer, normalised: the server sends the
 * record (200), `{ status: "suspended", operationId, deferred }` (200) or `{ operationId }` (202,
 * the wait ran out); the SDK tags them by `state`.
 */
export type ConvenienceOutcome<Settled = OperationResultRecord> =
  | { state: "settled"; result: Settled }
  | { state: "suspended"; operationId: string; deferred: DeferredHandle }
  | { state: "pending"; operationId: string };

/**
 * What `prompt` answers: when settled, the record plus the messages the run placed on the lane's
 * branch (`result.messages`, oldest first, the final assistant message last; `messagesTruncated`
 * when older ones were left out by the answer's bounds).
 */
export type PromptOutcome =
  | { state: "settled"; result: PromptAnswer & { interrupted?: Interrupted } }
  /** `ifBusy: "interrupt"`: what the interrupt drained rides beside a run still going too. */
  | { state: "suspended"; operationId: string; deferred: DeferredHandle; interrupted?: Interrupted }
  | { state: "pending"; operationId: string; interrupted?: Interrupted }
  /** `ifBusy: "steer" | "followUp"` on a busy lane: the prompt went to the running operation's queue. */
  | ({ state: "queued" } & QueuedPrompt);

/** `POST …/operations` (202): the admission; under `ifBusy`, a pending run or the operation a prompt was handed to. */
export type AcceptedOperation = v.InferOutput<typeof AcceptedOperationSchema>;

export type { PromptAnswer };
export type { Branch, BranchListing, CreatedSession, Session };
