import type { LaneSnapshot, OperationResultRecord, SnapshotOperation } from "../../schema/lane.ts";
import type { AssistantMessage } from "../../schema/messages.ts";
import { reduceFrames } from "../execution/frames.ts";
import { operationResult } from "../session/builtin-addresses.ts";
import type { SessionMutator } from "../session/mutation.ts";
import { committedFrames } from "./drive/recover-assistant.ts";
import { queueView, type LaneProjection } from "./lane-state.ts";

/**
 * Captures a LaneSnapshot inside a no-commit mutation (reference §5.3): every read is bounded and
 * directed by the lane projection. The streaming partial prefers the live in-process message,
 * then the fold of committed frames; a restored partial never enters the transcript.
 */
export function captureSnapshot(
  m: SessionMutator,
  lane: string,
  state: LaneProjection,
  live: { streaming?: AssistantMessage; faulted: boolean },
): LaneSnapshot {
  const transcript =
    state.tipId === null ? [] : m.scanBranch({ start: state.tipId, order: "newestFirst", stopAtType: "compaction" }).reverse();
  const lastResult =
    state.lastOperationId === null ? undefined : m.getValue(operationResult<OperationResultRecord>(state.lastOperationId))?.value;
  if (state.lastOperationId !== null && lastResult === undefined) throw new Error(`Invariant: record ${state.lastOperationId} is missing`);
  return {
    lane,
    tipId: state.tipId,
    transcript,
    ...(lastResult && { lastResult }),
    configuration: state.configuration,
    stats: m.getStats(),
    operation: operationView(m, state, live.streaming),
    queues: queueView(state),
    faulted: live.faulted,
  };
}

function operationView(m: SessionMutator, state: LaneProjection, streaming: AssistantMessage | undefined): SnapshotOperation | null {
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
  if (leaf.at === "assistant.retry_wait") {
    view.retry = { attempt: leaf.nextAttempt, maxAttempts: leaf.generationContext.retryPolicy.maxAttempts, nextAttemptAt: leaf.notBefore };
  }
  if (leaf.at === "assistant.effect_pending") {
    const partial = streaming ?? reduceFrames(committedFrames(m, meta.operationId, leaf.responseEntryId));
    if (partial) view.streamingMessage = partial;
  }
  return view;
}
