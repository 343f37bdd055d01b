import type { LaneSnapshot, RunningToolRow, SnapshotOperation, ToolResultView } from "../../schema/lane.ts";
import type { AssistantMessage } from "../../schema/messages.ts";
import { reduceFrames } from "../execution/frame-reducer.ts";
import { operationToolArgs, pendingEntry, pendingToolOutput } from "../session/builtin-addresses.ts";
import { storedHandle } from "./deferred-handle.ts";
import { readResult } from "./operation-codec.ts";
import type { SessionMutator } from "../session/mutation.ts";
import { committedFrames } from "./drive/assistant/recover.ts";
import { readCheckpoint } from "./drive/tools/checkpoint.ts";
import { queueView, type LaneProjection } from "./lane-state.ts";
import { readTranscriptTail } from "./transcript-tail.ts";
import type { ToolBatch } from "./types.ts";

/**
 * Captures a LaneSnapshot inside a no-commit mutation (reference §5.3): every read is bounded and
 * directed by the lane projection. The streaming partial prefers the live in-process message,
 * then the fold of committed frames; a restored partial never enters the transcript.
 */
export function captureSnapshot(
  m: SessionMutator,
  lane: string,
  state: LaneProjection,
  live: { streaming?: AssistantMessage; faulted: boolean; toolPartials?: ReadonlyMap<string, ToolResultView> },
): LaneSnapshot {
  const { transcript, olderEntries } = readTranscriptTail(m, state.tipId);
  const lastResult =
    state.lastOperationId === null ? undefined : readResult(m, state.lastOperationId);
  if (state.lastOperationId !== null && lastResult === undefined) throw new Error(`Invariant: record ${state.lastOperationId} is missing`);
  return {
    lane,
    tipId: state.tipId,
    transcript,
    ...(olderEntries && { olderEntries }),
    ...(lastResult && { lastResult }),
    configuration: state.configuration,
    stats: m.getStats(),
    operation: operationView(m, state, live.streaming, live.toolPartials),
    queues: queueView(state),
    faulted: live.faulted,
  };
}

function operationView(
  m: SessionMutator,
  state: LaneProjection,
  streaming: AssistantMessage | undefined,
  toolPartials: ReadonlyMap<string, ToolResultView> | undefined,
): SnapshotOperation | null {
  const operation = state.operation;
  if (!operation) return null;
  const { meta, state: leaf } = operation;
  const view: SnapshotOperation = {
    id: meta.operationId,
    kind: meta.intent.kind,
    startedAt: meta.startedAt,
    fromTipId: meta.sourceTipId,
    // The fold knows only "open" and "aborting"; "running" is reported by inspectExecution.
    status: leaf.control.status === "cancel_requested" ? "aborting" : "open",
    runningTools: [],
  };
  // Every retry wait shows its retry (§5.3 "in *.retry_wait"), the summary's as the assistant's:
  // the fold sets it from their `retry_scheduled` alike, and a snapshot must equal the fold.
  if (leaf.at === "assistant.retry_wait") {
    view.retry = { attempt: leaf.nextAttempt, maxAttempts: leaf.generationContext.retryPolicy.maxAttempts, nextAttemptAt: leaf.notBefore };
  }
  if (leaf.at === "summary.retry_wait") {
    view.retry = { attempt: leaf.nextAttempt, maxAttempts: leaf.summaryContext.retryPolicy.maxAttempts, nextAttemptAt: leaf.notBefore };
  }
  if (leaf.at === "deferred.suspended") {
    const stored = storedHandle(m, leaf.sourceEntryId);
    if (stored) view.deferred = { handle: stored.handle, poll: leaf.poll };
  }
  if (leaf.at === "assistant.effect_pending" || leaf.at === "deferred.effect_pending") {
    // The live partial (already a frozen copy) while a pass streams it, else the committed frames.
    const partial = streaming ?? reduceFrames(committedFrames(m, meta.operationId, leaf.responseEntryId));
    if (partial) view.streamingMessage = partial;
  }
  if (leaf.at === "tools") view.runningTools = toolRows(m, meta.operationId, leaf.batch, toolPartials);
  return view;
}

/**
 * The tools leaf's rows (reference §5.3): effect-pending calls run with their effective args;
 * outcome-ready calls show their staged result until placement. Planned and completed calls are
 * omitted. A missing staged outcome or batch assistant is a missing required reference.
 */
function toolRows(m: SessionMutator, operationId: string, batch: ToolBatch, toolPartials: ReadonlyMap<string, ToolResultView> | undefined): RunningToolRow[] {
  const live = batch.calls.filter((call) => call.status === "effect_pending" || call.status === "outcome_ready");
  if (live.length === 0) return [];
  const entry = m.getEntries([batch.assistantEntryId]).get(batch.assistantEntryId);
  if (entry?.type !== "message" || entry.message.role !== "assistant") throw new Error(`Invariant: tool batch assistant ${batch.assistantEntryId} is missing`);
  const content = entry.message.content;
  return live.map((call): RunningToolRow => {
    const block = content[call.sourceIndex];
    if (block?.type !== "toolCall") throw new Error(`Invariant: no tool call at content index ${call.sourceIndex}`);
    const args = m.getValue(operationToolArgs(operationId, batch.turnId, call.sourceIndex))?.value ?? block.arguments;
    const base = { toolCallId: block.id, toolName: block.name, args };
    if (call.status === "effect_pending") {
      // The live partial while this process runs the call, else the latest stored checkpoint.
      const partial = toolPartials?.get(block.id) ?? storedCheckpoint(m, operationId, call.resultEntryId);
      return { status: "running", ...base, ...(call.client && { executor: "client" as const }), ...(partial && { result: partial }) };
    }
    const staged = m.getValue(pendingEntry(call.resultEntryId))?.value;
    if (staged?.type !== "message" || staged.payload.role !== "toolResult") throw new Error(`Invariant: staged outcome ${call.resultEntryId} is missing`);
    const { content: resultContent, details, usage, addedToolNames, isError } = staged.payload;
    const result = {
      content: resultContent,
      ...(details !== undefined && { details }),
      ...(usage !== undefined && { usage }),
      ...(addedToolNames !== undefined && { addedToolNames }),
    };
    return { status: "settled", ...base, result, isError };
  });
}

/** A restored running call's latest durable progress (what a recovered watcher is shown). */
function storedCheckpoint(m: SessionMutator, operationId: string, invocationId: string): ToolResultView | undefined {
  const stored = m.getValue(pendingToolOutput(operationId, invocationId))?.value;
  return stored ? readCheckpoint(stored) : undefined;
}
