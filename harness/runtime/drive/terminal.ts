import type { HarnessEvent, OperationError, OperationResultRecord, OperationStatus } from "../../../schema/lane.ts";
import {
  clientToolResultPrefix,
  operationPreparationPrefix,
  operationToolArgsPrefix,
  operationToolMemoPrefix,
  pendingAssistantFrames,
  pendingEntry,
  pendingToolOutputPrefix,
} from "../../session/builtin-addresses.ts";
import type { SessionMutator } from "../../session/mutation.ts";
import type { Write } from "../../session/storage.ts";
import { deleteList, deleteValue } from "../../session/writes.ts";
import { operationDeletes, resultWrite } from "../operation-codec.ts";
import type { OperationMeta, OperationState } from "../types.ts";

/**
 * The universal terminal suffix (reference §3.8), in order: delete every operation-owned address,
 * write the immutable record exactly once; the lane state (current null, last = this op, inbox
 * preserved) follows as the command's final write. Terminal never deletes queued input.
 */
export function terminalSuffix(
  m: SessionMutator,
  operation: { meta: OperationMeta; state: OperationState },
  outcome: { status: OperationStatus; error?: OperationError; tipId: string | null; endedAt: number },
): { writes: Write[]; record: OperationResultRecord } {
  const { meta, state } = operation;
  const op = meta.operationId;
  const cleanup: Write[] = operationDeletes(m, meta);
  cleanup.push(
    ...m.scanValues(operationToolArgsPrefix(op)).map((stored) => deleteValue(stored.address)),
    ...m.scanValues(operationToolMemoPrefix(op)).map((stored) => deleteValue(stored.address)),
    ...m.scanValues(operationPreparationPrefix(op)).map((stored) => deleteValue(stored.address)),
    ...m.scanValues(pendingToolOutputPrefix(op)).map((stored) => deleteValue(stored.address)),
    ...m.scanValues(clientToolResultPrefix(op)).map((stored) => deleteValue(stored.address)),
  );
  if (state.at === "assistant.effect_pending" || state.at === "deferred.effect_pending") {
    cleanup.push(deleteList(pendingAssistantFrames(op, state.responseEntryId)));
  }
  if (state.at === "tools") {
    for (const call of state.batch.calls) {
      if (call.status === "outcome_ready") cleanup.push(deleteValue(pendingEntry(call.resultEntryId)));
    }
  }
  const record: OperationResultRecord = {
    operationId: op,
    kind: meta.intent.kind,
    status: outcome.status,
    ...(outcome.status === "failed" && outcome.error && { error: outcome.error }),
    fromTipId: meta.sourceTipId,
    tipId: outcome.tipId,
    startedAt: meta.startedAt,
    endedAt: outcome.endedAt,
    ...(state.settings.agent && { agent: state.settings.agent }),
  };
  return { writes: [...cleanup, resultWrite(record, meta.lane)], record };
}

/** The event that closes an operation of this kind. */
export function terminalEvent(lane: string, record: OperationResultRecord): HarnessEvent {
  const error = record.error ? { error: record.error } : {};
  // A watcher folds the record from this event (reduceLaneSnapshot): it names the same agent version.
  const agent = record.agent ? { agent: record.agent } : {};
  switch (record.kind) {
    case "run": {
      const status = record.status === "declined" ? "failed" : record.status;
      return { type: "run_end", lane, runId: record.operationId, status, ...error, fromTipId: record.fromTipId, tipId: record.tipId, endedAt: record.endedAt, ...agent };
    }
    case "compaction":
      // A completed standalone compaction's tip is its compaction entry.
      return {
        type: "compaction_end",
        lane,
        runId: record.operationId,
        reason: "manual",
        status: record.status,
        ...(record.status === "completed" && record.tipId !== null && { entryId: record.tipId }),
        ...error,
        endedAt: record.endedAt,
        ...agent,
      };
    case "navigation":
      return { type: "navigation_end", lane, runId: record.operationId, status: record.status, ...error, fromTipId: record.fromTipId, tipId: record.tipId, endedAt: record.endedAt };
  }
}
