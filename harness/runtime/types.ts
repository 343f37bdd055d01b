import type { DeferredHandle } from "../../schema/messages.ts";
import type {
  InboxItem,
  LaneConfiguration,
  OperationResultRecord,
  QueueMode,
} from "../../schema/lane.ts";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { CompactionSettings, DeferredMode, StreamOptions, ToolExecutionMode } from "../../schema/settings.ts";

// Durable operation state (reference §3.1–3.3). Every transition replaces the complete
// `pi.op.state` value; `pi.op.meta` is written once at acceptance. Both are deleted by the
// terminal transaction, which writes the immutable `pi.result` record instead.

export type Control = { status: "running" } | { status: "cancel_requested"; requestedAt: number };

export interface NormalizedRetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
}

/** Captured into every operation at acceptance (§3.3). */
export interface RunSettings {
  compaction: CompactionSettings;
  steeringMode: QueueMode;
  followUpMode: QueueMode;
  toolExecution: ToolExecutionMode;
  /** The run request's own deferred mode (§3.11); absent: the session's stream options decide. */
  deferred?: DeferredMode;
  /** The agent version the session was bound to at acceptance (named in the record and in tool calls). */
  agent?: AgentVersionRef;
}

export interface OperationScope {
  control: Control;
  settings: RunSettings;
  latestAssistantEntryId: string | null;
}

export type Continuation =
  | { kind: "need_assistant"; overflowRecoveryUsed: boolean }
  | { kind: "may_finish"; includeFinalAssistant: boolean };

export interface GenerationContext {
  stepId: string;
  triggerEntryId: string;
  configuration: LaneConfiguration;
  streamOptions: StreamOptions;
  retryPolicy: NormalizedRetryPolicy;
  overflowRecoveryUsed: boolean;
}

export interface RetryWait {
  nextAttempt: number;
  notBefore: number;
  errorMessage: string;
}

export type ToolCallStatus =
  | { status: "planned" }
  | {
      status: "effect_pending";
      replay: "never" | "safe";
      /** A client-executed call: the run waits for its posted result (until `deadline`, if any). */
      client?: { deadline?: number };
    }
  | { status: "outcome_ready"; terminate: boolean }
  | { status: "completed"; terminate: boolean };

export type ToolCallState = { sourceIndex: number; resultEntryId: string } & ToolCallStatus;

export interface ToolBatch {
  assistantEntryId: string;
  configuration: LaneConfiguration;
  turnId: string;
  /** True when the assistant stopped at its output limit: its calls are never executed. */
  truncated: boolean;
  calls: ToolCallState[];
}

export interface DeferredScope {
  stepId: string;
  sourceEntryId: string;
  poll: number;
  configuration: LaneConfiguration;
  streamOptions: StreamOptions;
}

/** Where a run resumes after an in-run compaction: the boundary's continuation and trigger. */
export interface CheckpointData {
  continuation: Continuation;
  triggerEntryId: string;
}

export type ResultBoundary =
  | { kind: "resume_checkpoint"; resumeAfter: CheckpointData }
  | { kind: "finish" }
  | { kind: "commit_navigation"; targetId: string | null; label?: string };

export interface SummaryTask {
  taskId: string;
  reason?: "manual" | "threshold" | "overflow";
  customInstructions?: string;
  boundary: ResultBoundary;
}

export interface SummaryContext {
  resultEntryId: string;
  configuration: LaneConfiguration;
  streamOptions: StreamOptions;
  retryPolicy: NormalizedRetryPolicy;
}

/** The 13 flat leaves of §3.3, discriminated by `at`; every leaf carries the scope. */
export type OperationLeaf =
  | { at: "starting" }
  | {
      at: "checkpoint";
      continuation: Continuation;
      triggerEntryId: string;
      /**
       * This boundary's threshold compaction already ended (a decline, or a publication that still
       * needs finish mediation): the probe is not run again for it, so a declining
       * `before_compaction` cannot loop the boundary.
       */
      thresholdDone?: true;
    }
  | { at: "assistant.ready"; generationContext: GenerationContext; nextAttempt: number }
  | {
      at: "assistant.effect_pending";
      generationContext: GenerationContext;
      attempt: number;
      responseEntryId: string;
      usageId: string;
      intendedOutputLimit: number;
      contextWindow: number;
    }
  | ({ at: "assistant.retry_wait"; generationContext: GenerationContext } & RetryWait)
  | { at: "tools"; batch: ToolBatch }
  | ({ at: "deferred.suspended" } & DeferredScope)
  | ({ at: "deferred.effect_pending"; responseEntryId: string; usageId: string } & DeferredScope)
  | { at: "summary.deciding"; task: SummaryTask }
  | { at: "summary.ready"; task: SummaryTask; summaryContext: SummaryContext; nextAttempt: number }
  | {
      at: "summary.effect_pending";
      task: SummaryTask;
      summaryContext: SummaryContext;
      attempt: number;
      request?: { index: number; usageId: string };
      usageIds: string[];
    }
  | ({ at: "summary.retry_wait"; task: SummaryTask; summaryContext: SummaryContext } & RetryWait)
  | { at: "navigation.ready_to_commit"; targetId: string | null; label?: string };

export type OperationState = OperationScope & OperationLeaf;
export type LeafName = OperationLeaf["at"];
export type StateAt<A extends LeafName> = OperationScope & Extract<OperationLeaf, { at: A }>;

export type OperationIntent =
  | { kind: "run"; promptEntryIds: string[] }
  | { kind: "compaction"; customInstructions?: string }
  | { kind: "navigation"; targetId: string | null; summarize: boolean; label?: string; customInstructions?: string };

export interface OperationMeta {
  operationId: string;
  lane: string;
  sourceTipId: string | null;
  startedAt: number;
  intent: OperationIntent;
}

/**
 * Durable `pi.lane.state/{lane}`: rewritten only when one of its fields (or the open operation it
 * holds, lane-state-form.ts) changes (§3.2). `pending`: the ids of the lane's pending runs in
 * acceptance order (pending-runs.ts; absent in earlier forms: none). `currentOperationId` is the
 * earliest form, read only (and checked against the meta rows).
 */
export interface DurableLaneState {
  currentOperationId?: string | null;
  lastOperationId: string | null;
  inbox: InboxItem[];
  pending?: string[];
}

/**
 * How a caller accepts (reference §3.1): `drivenAtOnce` when it drives the operation at once in
 * this process, so a run's acceptance may carry its first request intent (first-request.ts).
 */
export interface AcceptOptions {
  drivenAtOnce?: boolean;
}

/** What a caller of drive(id) asks (reference §4.1). */
export interface DriveOptions {
  operationId: string;
  waitForRetry?: boolean;
  pollDeferred?: boolean;
}

export type DriveOutcome =
  | { kind: "settled"; outcome: OperationResultRecord }
  | { kind: "waiting"; operationId: string; reason: "retry"; notBefore: number }
  | { kind: "waiting"; operationId: string; reason: "deferred"; deferred: DeferredHandle }
  /** Every unsettled call of the tool batch waits for a client's result (D11). */
  | { kind: "waiting"; operationId: string; reason: "client_tool" };

