import * as v from "valibot";
import { LaneSnapshotSchema, OperationKindSchema, OperationResultRecordSchema, DeferredWaitSchema, LiveStatusSchema } from "./lane.ts";
import { AgentMessageSchema, DeferredHandleSchema } from "./messages.ts";

// What the lane, queue and operation routes answer (spec/API.md "Lanes", "Queue", "Operations"):
// the schemas the OpenAPI document publishes, and the types the session object answers with.

/**
 * How much of a run the prompt convenience returns: the newest messages up to this many and this
 * many bytes of JSON. The final message is returned whatever its size (an entry is bounded on its
 * own); older messages past a bound are left out and `messagesTruncated` says so. The whole run is
 * on the lane's branch: `GET …/branches/{lane}/entries?start={tipId}&stopAtId={fromTipId}`. The
 * byte bound keeps an answer well inside what an Idempotency-Key replay can store (one SQLite row).
 */
export const PROMPT_ANSWER_LIMITS = { messages: 64, bytes: 512 * 1024 } as const;

/**
 * What `POST …/prompt` answers (200) once the run settled: its result record plus the messages it
 * placed on the lane's branch between `fromTipId` and `tipId`, oldest first (the prompt, any queued
 * messages the run took in, the assistant's answers), bounded by PROMPT_ANSWER_LIMITS.
 */
export const PromptAnswerSchema = v.object({
  ...OperationResultRecordSchema.entries,
  messages: v.array(AgentMessageSchema),
  messagesTruncated: v.boolean(),
});
export type PromptAnswer = v.InferOutput<typeof PromptAnswerSchema>;

/** A waiting convenience's answer for a run parked on a deferred provider response (200). */
export const SuspendedRunSchema = v.object({ status: v.literal("suspended"), operationId: v.string(), deferred: DeferredHandleSchema });

/** A waiting convenience's answer (202) when its wait ran out before the operation settled. */
export const PendingOperationSchema = v.object({ operationId: v.string() });

/** What the continuation run of navigate and compact answers: like prompt's 200 or 202. */
const ContinuationRunSchema = v.union([PromptAnswerSchema, SuspendedRunSchema, PendingOperationSchema]);

/** `POST …/navigate` (200): the settled navigation, and the continuation run when one started. */
export const NavigateAnswerSchema = v.object({ navigation: OperationResultRecordSchema, run: v.optional(ContinuationRunSchema) });
/** `POST …/compact` (200): the settled compaction, and the continuation run when one started. */
export const CompactAnswerSchema = v.object({ compaction: OperationResultRecordSchema, run: v.optional(ContinuationRunSchema) });

/** `POST …/operations` (202): acceptance runs no work. */
export const OperationAdmissionSchema = v.object({ operationId: v.string(), kind: OperationKindSchema, startedAt: v.number() });
export type OperationAdmission = v.InferOutput<typeof OperationAdmissionSchema>;

/** `GET …/operations/{opId}` and its resume: settled with its record, or where the operation is now. */
export const OperationViewSchema = v.variant("state", [
  v.object({ state: v.literal("settled"), result: OperationResultRecordSchema }),
  v.object({
    state: v.literal("active"),
    status: LiveStatusSchema,
    /** The step the operation is at (its state machine's leaf). */
    at: v.string(),
    retry: v.optional(v.object({ attempt: v.number(), notBefore: v.number() })),
    /** A suspended run's handle and how many polls it has had. */
    deferred: v.optional(DeferredWaitSchema),
  }),
  /** A pending run (ifBusy "enqueue" or "interrupt"): its place in its lane's line, 1 next. */
  v.object({ state: v.literal("pending"), position: v.number() }),
]);
export type OperationView = v.InferOutput<typeof OperationViewSchema>;

/** A pending run as `POST …/operations` answers it and `GET …/lanes/{lane}/pending` lists it. */
export const PendingRunSchema = v.object({ operationId: v.string(), kind: v.literal("run"), state: v.literal("pending"), position: v.number(), acceptedAt: v.number() });
export type PendingRun = v.InferOutput<typeof PendingRunSchema>;

/** A prompt that `ifBusy: "steer" | "followUp"` handed to the running operation's queue. */
export const QueuedPromptSchema = v.object({ operationId: v.string(), entryId: v.string(), queued: v.picklist(["steer", "followUp"]) });
export type QueuedPrompt = v.InferOutput<typeof QueuedPromptSchema>;

/** What an interrupting prompt drained from the operation it aborted. */
export const InterruptedSchema = v.object({ operationId: v.string(), steer: v.array(AgentMessageSchema), followUp: v.array(AgentMessageSchema) });
export type Interrupted = v.InferOutput<typeof InterruptedSchema>;

/**
 * `POST …/operations` (202): the admission; under `ifBusy`, a pending run (with what an interrupt
 * drained) or the running operation a prompt was handed to.
 */
export const AcceptedOperationSchema = v.union([
  OperationAdmissionSchema,
  v.object({ ...PendingRunSchema.entries, interrupted: v.optional(InterruptedSchema) }),
  QueuedPromptSchema,
]);

/** `POST …/operations/{opId}/abort`: the steer and follow-up messages the abort drained from the queue. */
export const AbortRequestResultSchema = v.object({
  operationId: v.string(),
  newlyRequested: v.boolean(),
  steer: v.array(AgentMessageSchema),
  followUp: v.array(AgentMessageSchema),
});
export type AbortRequestResult = v.InferOutput<typeof AbortRequestResultSchema>;

/** `POST …/abort`: the abort request's answer, and the record when the operation settled within the wait. */
export const AbortOutcomeSchema = v.object({ ...AbortRequestResultSchema.entries, record: v.optional(OperationResultRecordSchema) });
export type AbortOutcome = v.InferOutput<typeof AbortOutcomeSchema>;

/** `GET …/snapshot`: `seq` is the session's watch-event counter at capture, as in a watch's snapshot message. */
export const LaneSnapshotAnswerSchema = v.object({ seq: v.number(), snapshot: LaneSnapshotSchema });

/** `POST …/queue` (201): the queued item's entry id (its id once placed). */
export const QueuedSchema = v.object({ entryId: v.string() });

export const CancelQueuedResultSchema = v.picklist(["cancelled", "already_consumed", "not_found"]);
export type CancelQueuedResult = v.InferOutput<typeof CancelQueuedResultSchema>;
/** `DELETE …/queue/{entryId}`. */
export const CancelQueuedAnswerSchema = v.object({ result: CancelQueuedResultSchema });

/** `POST …/entries` of a lane or branch (201): `placed: false` when the lane was busy and queued it as a write. */
export const EntryPlacementSchema = v.object({ entryId: v.string(), placed: v.boolean() });

/** `POST …/tool-results/{toolCallId}` (202). */
export const ToolResultAcceptedSchema = v.object({ accepted: v.literal(true) });
