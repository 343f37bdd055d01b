import * as v from "valibot";
import { AgentVersionRefSchema, type AgentVersionRef } from "./agent-binding.ts";
import { EntrySchema, type Entry } from "./entries.ts";
import type { MessageDelta } from "./message-delta.ts";
import { JsonValueSchema, type JsonValue } from "./json.ts";
import { AgentMessageSchema, AssistantMessageSchema, DeferredHandleSchema, ToolResultMessageSchema, type AgentMessage, type AssistantMessage, type DeferredHandle, type ToolResultMessage } from "./messages.ts";
import { OlderEntriesSchema } from "./transcript-bounds.ts";
import { SessionStatsSchema, UsageSchema, type SessionStats, type Usage, type UsageRow } from "./usage.ts";

// Lane-facing wire shapes: configuration, queue, operation records, snapshots and events
// (reference §2.3, §3.2, §3.7–3.8, §5.2–5.3).

export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"] as const;
export const ThinkingLevelSchema = v.picklist(THINKING_LEVELS);
export type ThinkingLevel = v.InferOutput<typeof ThinkingLevelSchema>;

export const ModelIdentitySchema = v.object({
  provider: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
  modelId: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
});
export type ModelIdentity = v.InferOutput<typeof ModelIdentitySchema>;

export const LaneConfigurationSchema = v.object({
  model: ModelIdentitySchema,
  thinkingLevel: ThinkingLevelSchema,
  activeToolNames: v.array(v.string()),
});
export type LaneConfiguration = v.InferOutput<typeof LaneConfigurationSchema>;

export const QueueModeSchema = v.picklist(["all", "one-at-a-time"]);

/**
 * A lane's queue (steer, followUp, nextRun and queued writes) holds at most this many items and
 * this many bytes of payload (JSON): every snapshot and `GET …/lanes/{lane}` carries it whole.
 */
export const MAX_QUEUED_ITEMS = 100;
export const MAX_QUEUED_BYTES = 4 * 1024 * 1024;
export type QueueMode = v.InferOutput<typeof QueueModeSchema>;

export type InboxKind = "steer" | "followUp" | "nextRun" | "write";
export interface InboxItem {
  entryId: string;
  kind: InboxKind;
}

// Answer shapes (spec/API.md "Lanes", "Operations"): the schemas the OpenAPI document publishes,
// and the types the engine builds the answers with (inferred here, so the two cannot drift).

const InboxKindSchema = v.picklist(["steer", "followUp", "nextRun", "write"]);

/** The snapshot/event view of one queued item: payload included, in global admission order. */
export const LaneQueuedItemSchema = v.variant("type", [
  v.object({ entryId: v.string(), kind: InboxKindSchema, type: v.literal("message"), message: AgentMessageSchema }),
  v.object({ entryId: v.string(), kind: v.literal("write"), type: v.literal("custom"), customType: v.string(), data: v.optional(JsonValueSchema) }),
]);
export type LaneQueuedItem = v.InferOutput<typeof LaneQueuedItemSchema>;

export const OperationKindSchema = v.picklist(["run", "compaction", "navigation"]);
export type OperationKind = v.InferOutput<typeof OperationKindSchema>;
export type OperationStatus = "completed" | "declined" | "aborted" | "failed";

export const OperationErrorSchema = v.object({ code: v.string(), message: v.string(), details: v.optional(JsonValueSchema) });
export type OperationError = v.InferOutput<typeof OperationErrorSchema>;

/** One immutable record per terminal operation, at `pi.result/{id}`, kept forever (§3.8). */
export const OperationResultRecordSchema = v.object({
  operationId: v.string(),
  kind: OperationKindSchema,
  status: v.picklist(["completed", "declined", "aborted", "failed"]),
  error: v.optional(OperationErrorSchema),
  fromTipId: v.nullable(v.string()),
  tipId: v.nullable(v.string()),
  startedAt: v.number(),
  endedAt: v.number(),
  /** The agent version the session was bound to when the operation was accepted. */
  agent: v.optional(AgentVersionRefSchema),
});
export type OperationResultRecord = v.InferOutput<typeof OperationResultRecordSchema>;

export const LiveStatusSchema = v.picklist(["running", "open", "aborting"]);
export type LiveStatus = v.InferOutput<typeof LiveStatusSchema>;

export const CurrentOperationInfoSchema = v.object({
  id: v.string(),
  kind: OperationKindSchema,
  startedAt: v.number(),
  status: LiveStatusSchema,
  capturedModel: v.optional(ModelIdentitySchema),
});
export type CurrentOperationInfo = v.InferOutput<typeof CurrentOperationInfoSchema>;

/** A lane as listings and `PUT …/lanes/{lane}` show it. */
export const LaneInfoSchema = v.object({ name: v.string(), tipId: v.nullable(v.string()), operation: v.nullable(CurrentOperationInfoSchema) });
export type LaneInfo = v.InferOutput<typeof LaneInfoSchema>;

/** `GET …/lanes/{lane}`: `current.at` names the operation's step (its state machine's leaf). */
export const LaneExecutionInfoSchema = v.object({
  lane: v.string(),
  tipId: v.nullable(v.string()),
  configuration: LaneConfigurationSchema,
  current: v.nullable(v.object({ ...CurrentOperationInfoSchema.entries, at: v.string() })),
  lastOperationId: v.nullable(v.string()),
  queues: v.array(LaneQueuedItemSchema),
});
export type LaneExecutionInfo = v.InferOutput<typeof LaneExecutionInfoSchema>;

export const RetryInfoSchema = v.object({ attempt: v.number(), maxAttempts: v.number(), nextAttemptAt: v.number() });
export type RetryInfo = v.InferOutput<typeof RetryInfoSchema>;

export const ToolResultViewSchema = v.object({
  content: ToolResultMessageSchema.entries.content,
  details: v.optional(JsonValueSchema),
  usage: v.optional(UsageSchema),
  addedToolNames: v.optional(v.array(v.string())),
  terminate: v.optional(v.boolean()),
});
export type ToolResultView = v.InferOutput<typeof ToolResultViewSchema>;

const toolCall = { toolCallId: v.string(), toolName: v.string(), args: JsonValueSchema };
export const RunningToolRowSchema = v.variant("status", [
  v.object({
    status: v.literal("running"),
    ...toolCall,
    /** "client": the call waits for the tenant's client to post its result. */
    executor: v.optional(v.literal("client")),
    result: v.optional(ToolResultViewSchema),
  }),
  v.object({ status: v.literal("settled"), ...toolCall, result: ToolResultViewSchema, isError: v.boolean() }),
]);
export type RunningToolRow = v.InferOutput<typeof RunningToolRowSchema>;

/** A suspended run's deferred handle and how many polls it has had. */
export const DeferredWaitSchema = v.object({ handle: DeferredHandleSchema, poll: v.number() });

export const SnapshotOperationSchema = v.object({
  id: v.string(),
  kind: OperationKindSchema,
  startedAt: v.number(),
  fromTipId: v.nullable(v.string()),
  status: LiveStatusSchema,
  retry: v.optional(RetryInfoSchema),
  deferred: v.optional(DeferredWaitSchema),
  streamingMessage: v.optional(AssistantMessageSchema),
  runningTools: v.array(RunningToolRowSchema),
});
export type SnapshotOperation = v.InferOutput<typeof SnapshotOperationSchema>;

export const LaneSnapshotSchema = v.object({
  lane: v.string(),
  tipId: v.nullable(v.string()),
  /**
   * Compaction-bounded, oldest first: the newest compaction (if any) first, then up to the tip;
   * only its newest part when `olderEntries` is set (bounds in transcript-bounds.ts).
   */
  transcript: v.array(EntrySchema),
  /** Set when older entries of the compaction-bounded transcript were left out of `transcript`. */
  olderEntries: v.optional(OlderEntriesSchema),
  lastResult: v.optional(OperationResultRecordSchema),
  configuration: LaneConfigurationSchema,
  stats: SessionStatsSchema,
  operation: v.nullable(SnapshotOperationSchema),
  queues: v.array(LaneQueuedItemSchema),
  faulted: v.boolean(),
});
export type LaneSnapshot = v.InferOutput<typeof LaneSnapshotSchema>;

export type CompactionReason = "manual" | "threshold" | "overflow";

/** Every event a lane watcher can receive (the JSON-safe LaneWatchEvent of §5.4). */
export type LaneEvent =
  | { type: "run_start"; lane: string; runId: string; startedAt: number }
  | {
      type: "run_end";
      lane: string;
      runId: string;
      status: "completed" | "failed" | "aborted";
      error?: OperationError;
      fromTipId: string | null;
      tipId: string | null;
      endedAt: number;
      /** The agent version the run was accepted under, as its record names it (absent: none). */
      agent?: AgentVersionRef;
    }
  | { type: "compaction_start"; lane: string; runId: string; reason: CompactionReason; startedAt: number }
  | {
      type: "compaction_end";
      lane: string;
      runId: string;
      reason: CompactionReason;
      status: OperationStatus;
      entryId?: string;
      error?: OperationError;
      endedAt: number;
      /** On the end of a standalone compaction: the agent version its record names (absent: none). */
      agent?: AgentVersionRef;
    }
  | { type: "navigation_start"; lane: string; runId: string; targetId: string | null; startedAt: number }
  | {
      type: "navigation_end";
      lane: string;
      runId: string;
      status: OperationStatus;
      error?: OperationError;
      fromTipId: string | null;
      tipId: string | null;
      endedAt: number;
    }
  | { type: "operation_abort"; lane: string; operationId: string; steer: AgentMessage[]; followUp: AgentMessage[] }
  | { type: "run_suspend"; lane: string; runId: string; reason: "deferred"; deferred: DeferredHandle; poll: number }
  | { type: "run_resume"; lane: string; runId: string }
  | {
      type: "retry_scheduled";
      lane: string;
      runId: string;
      step: string;
      attempt: number;
      maxAttempts: number;
      delayMs: number;
      notBefore: number;
      errorMessage: string;
      recovery?: true;
    }
  | { type: "retry_start"; lane: string; runId: string; step: string; attempt: number }
  | { type: "retry_end"; lane: string; runId: string; step: string; attempt: number; success: boolean; finalError?: string }
  | { type: "turn_start"; lane: string; runId: string; turnId: string }
  | { type: "turn_end"; lane: string; runId: string; turnId: string; message: AssistantMessage; toolResults: ToolResultMessage[] }
  | { type: "message_start"; lane: string; runId?: string; message: AgentMessage }
  /** What changed in the streaming response `entryId` since the previous update (schema/message-delta.ts). */
  | { type: "message_update"; lane: string; runId: string; entryId: string; delta: MessageDelta }
  | { type: "message_end"; lane: string; runId?: string; message: AgentMessage; entryId?: string }
  | { type: "entry_added"; lane: string; entry: Entry; recovery?: true }
  | {
      type: "tool_start";
      lane: string;
      runId: string;
      turnId: string;
      toolCallId: string;
      toolName: string;
      args: JsonValue;
      /** "client": the run now waits for a client to post this call's result. */
      executor?: "client";
      /** A client call of a sequential batch: the calls after it start only once it is answered. */
      holdsBack?: true;
      recovery?: true;
    }
  | { type: "tool_update"; lane: string; runId: string; turnId: string; toolCallId: string; toolName: string; partialResult: ToolResultView }
  | {
      type: "tool_end";
      lane: string;
      runId: string;
      turnId: string;
      toolCallId: string;
      toolName: string;
      result: ToolResultView;
      isError: boolean;
      terminate: boolean;
      recovery?: true;
    }
  | { type: "queue_update"; lane: string; queues: LaneQueuedItem[] }
  | { type: "config_update"; lane: string; property: "model" | "thinkingLevel" | "activeTools"; value: JsonValue; previous: JsonValue }
  | { type: "usage"; lane?: string; row: UsageRow; totals: Usage }
  /** Session-wide: the session stats after a commit that placed messages (any lane, any branch). */
  | { type: "stats"; stats: SessionStats }
  | { type: "lane_created"; lane: string; at: string | null }
  | { type: "fault"; code: string; message: string };

/** Session-wide events that are not about one lane. */
export type SessionEvent =
  | { type: "settings_update"; property: string; value: JsonValue; previous: JsonValue }
  | { type: "value_update"; value: "session_name"; name: string | null }
  | { type: "value_update"; value: "entry_label"; targetId: string; label: string | null }
  | { type: "handler_error"; kind: "hook" | "event"; hook?: string; error: string; lane?: string };

export type HarnessEvent = LaneEvent | SessionEvent;
export type HarnessEventType = HarnessEvent["type"];
