import * as v from "valibot";
import type { Entry } from "./entries.ts";
import type { MessageDelta } from "./message-delta.ts";
import type { JsonValue } from "./json.ts";
import type { AgentMessage, AssistantMessage, DeferredHandle, ToolResultMessage } from "./messages.ts";
import type { OlderEntries } from "./transcript-bounds.ts";
import type { SessionStats, Usage, UsageRow } from "./usage.ts";

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

/** The snapshot/event view of one queued item: payload included, in global admission order. */
export type LaneQueuedItem =
  | { entryId: string; kind: InboxKind; type: "message"; message: AgentMessage }
  | { entryId: string; kind: "write"; type: "custom"; customType: string; data?: JsonValue };

export type OperationKind = "run" | "compaction" | "navigation";
export type OperationStatus = "completed" | "declined" | "aborted" | "failed";

export interface OperationError {
  code: string;
  message: string;
  details?: JsonValue;
}

/** One immutable record per terminal operation, at `pi.result/{id}`, kept forever (§3.8). */
export interface OperationResultRecord {
  operationId: string;
  kind: OperationKind;
  status: OperationStatus;
  error?: OperationError;
  fromTipId: string | null;
  tipId: string | null;
  startedAt: number;
  endedAt: number;
}

export type LiveStatus = "running" | "open" | "aborting";

export interface CurrentOperationInfo {
  id: string;
  kind: OperationKind;
  startedAt: number;
  status: LiveStatus;
  capturedModel?: ModelIdentity;
}

export interface LaneInfo {
  name: string;
  tipId: string | null;
  operation: CurrentOperationInfo | null;
}

export interface LaneExecutionInfo {
  lane: string;
  tipId: string | null;
  configuration: LaneConfiguration;
  current: (CurrentOperationInfo & { at: string }) | null;
  lastOperationId: string | null;
  queues: LaneQueuedItem[];
}

export interface RetryInfo {
  attempt: number;
  maxAttempts: number;
  nextAttemptAt: number;
}

export type RunningToolRow =
  | {
      status: "running";
      toolCallId: string;
      toolName: string;
      args: JsonValue;
      /** "client": the call waits for the tenant's client to post its result. */
      executor?: "client";
      result?: ToolResultView;
    }
  | { status: "settled"; toolCallId: string; toolName: string; args: JsonValue; result: ToolResultView; isError: boolean };

export interface ToolResultView {
  content: ToolResultMessage["content"];
  details?: JsonValue;
  usage?: Usage;
  addedToolNames?: string[];
  terminate?: boolean;
}

export interface SnapshotOperation {
  id: string;
  kind: OperationKind;
  startedAt: number;
  fromTipId: string | null;
  status: LiveStatus;
  retry?: RetryInfo;
  deferred?: { handle: DeferredHandle; poll: number };
  streamingMessage?: AssistantMessage;
  runningTools: RunningToolRow[];
}

export interface LaneSnapshot {
  lane: string;
  tipId: string | null;
  /**
   * Compaction-bounded, oldest first: the newest compaction (if any) first, then up to the tip;
   * only its newest part when `olderEntries` is set (bounds in transcript-bounds.ts).
   */
  transcript: Entry[];
  /** Set when older entries of the compaction-bounded transcript were left out of `transcript`. */
  olderEntries?: OlderEntries;
  lastResult?: OperationResultRecord;
  configuration: LaneConfiguration;
  stats: SessionStats;
  operation: SnapshotOperation | null;
  queues: LaneQueuedItem[];
  faulted: boolean;
}

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
