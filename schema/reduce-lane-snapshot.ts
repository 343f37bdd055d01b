import type { AgentVersionRef } from "./agent-binding.ts";
import type { Entry } from "./entries.ts";
import { isJsonObject, type JsonValue } from "./json.ts";
import { applyMessageDelta } from "./message-delta.ts";
import {
  THINKING_LEVELS,
  type HarnessEvent,
  type LaneConfiguration,
  type LaneSnapshot,
  type ModelIdentity,
  type OperationError,
  type OperationKind,
  type OperationResultRecord,
  type OperationStatus,
  type RunningToolRow,
  type SnapshotOperation,
  type ThinkingLevel,
} from "./lane.ts";
import { boundTranscript } from "./transcript-bounds.ts";

// The normative client fold (reference §5.4, ARCHITECTURE D13/D14.6): a watcher applies every event
// after its snapshot. Pure: the input snapshot (and everything reachable from it) is never mutated;
// changed paths are copied, untouched parts are shared. `navigation_end` asks for a resnapshot.

/** Returned instead of a snapshot when the caller must resnapshot (the moved tip may be outside the replica). */
export interface LaneRebase {
  rebase: true;
}

export function isRebase(x: LaneSnapshot | LaneRebase): x is LaneRebase {
  return "rebase" in x && x.rebase === true;
}

export function reduceLaneSnapshot(snapshot: LaneSnapshot, event: HarnessEvent): LaneSnapshot | LaneRebase {
  // Global rule: lane-scoped events for other lanes are ignored; `usage` and `stats` are
  // session-wide. The stats are the session's, so messages placed elsewhere (another lane, a
  // data-only branch) reach a lane stream through `stats` events, never its entry_added (§5.4).
  if ("lane" in event && event.lane !== undefined && event.lane !== snapshot.lane && event.type !== "usage") return snapshot;
  switch (event.type) {
    case "run_start":
      return openOperation(snapshot, event.runId, "run", event.startedAt);
    case "compaction_start":
      // An in-run compaction is a segment bracket inside the open run: nothing changes.
      if (snapshot.operation !== null) return snapshot;
      return openOperation(snapshot, event.runId, "compaction", event.startedAt);
    case "navigation_start":
      return openOperation(snapshot, event.runId, "navigation", event.startedAt);
    case "operation_abort":
      return updateOperation(snapshot, event.operationId, (op) => ({ ...op, status: "aborting" }));
    case "run_suspend":
      return updateOperation(snapshot, event.runId, (op) => {
        const next: SnapshotOperation = { ...op, deferred: { handle: event.deferred, poll: event.poll } };
        delete next.streamingMessage;
        return next;
      });
    case "run_resume":
      return updateOperation(snapshot, event.runId, (op) => {
        if (op.deferred === undefined) return op;
        const next: SnapshotOperation = { ...op };
        delete next.deferred;
        return next;
      });
    case "retry_scheduled":
      return updateOperation(snapshot, event.runId, (op) => ({
        ...op,
        retry: { attempt: event.attempt, maxAttempts: event.maxAttempts, nextAttemptAt: event.notBefore },
      }));
    case "retry_start":
    case "retry_end":
      return updateOperation(snapshot, event.runId, (op) => {
        if (op.retry === undefined) return op;
        const next: SnapshotOperation = { ...op };
        delete next.retry;
        return next;
      });
    case "message_start": {
      const message = event.message;
      if (event.runId === undefined || message.role !== "assistant" || message.stopReason !== "pending") {
        return snapshot;
      }
      return updateOperation(snapshot, event.runId, (op) => ({ ...op, streamingMessage: message }));
    }
    case "message_update":
      // A delta applies to the streaming message this replica holds (from message_start or its
      // snapshot); without one there is nothing it could apply to.
      return updateOperation(snapshot, event.runId, (op) =>
        op.streamingMessage === undefined ? op : { ...op, streamingMessage: applyMessageDelta(op.streamingMessage, event.delta) },
      );
    case "message_end":
      if (event.runId === undefined) return snapshot;
      return updateOperation(snapshot, event.runId, (op) => {
        if (op.streamingMessage === undefined) return op;
        const next: SnapshotOperation = { ...op };
        delete next.streamingMessage;
        return next;
      });
    case "tool_start": {
      // Upsert: a capture may already contain the row (e.g. a recovery replay).
      const row: RunningToolRow = {
        status: "running",
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        args: event.args,
        ...(event.executor && { executor: event.executor }),
      };
      return updateOperation(snapshot, event.runId, (op) => {
        const index = op.runningTools.findIndex((r) => r.toolCallId === event.toolCallId);
        const runningTools = index === -1 ? [...op.runningTools, row] : op.runningTools.with(index, row);
        return { ...op, runningTools };
      });
    }
    case "tool_update":
      return updateOperation(snapshot, event.runId, (op) => {
        const index = op.runningTools.findIndex((r) => r.toolCallId === event.toolCallId);
        const current = op.runningTools[index];
        if (current === undefined || current.status !== "running") return op;
        const row: RunningToolRow = { ...current, result: event.partialResult };
        return { ...op, runningTools: op.runningTools.with(index, row) };
      });
    case "tool_end":
      // Settles an existing row only; it cannot create one.
      return updateOperation(snapshot, event.runId, (op) => {
        const index = op.runningTools.findIndex((r) => r.toolCallId === event.toolCallId);
        const current = op.runningTools[index];
        if (current === undefined) return op;
        const row: RunningToolRow = {
          status: "settled",
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          args: current.args,
          result: event.result,
          isError: event.isError,
        };
        return { ...op, runningTools: op.runningTools.with(index, row) };
      });
    case "entry_added":
      return addEntry(snapshot, event.entry);
    case "queue_update":
      return { ...snapshot, queues: event.queues };
    case "usage":
      return { ...snapshot, stats: { ...snapshot.stats, usage: event.totals } };
    case "stats":
      return { ...snapshot, stats: event.stats };
    case "config_update": {
      const configuration = applyConfig(snapshot.configuration, event.property, event.value);
      return configuration === snapshot.configuration ? snapshot : { ...snapshot, configuration };
    }
    case "run_end": {
      const op = snapshot.operation;
      if (op === null || op.id !== event.runId || op.kind !== "run") return snapshot;
      const lastResult = resultRecord(op, "run", event.status, event.error, event.fromTipId, event.tipId, event.endedAt, event.agent);
      return { ...snapshot, lastResult, operation: null, tipId: event.tipId };
    }
    case "compaction_end": {
      // Terminal only for a standalone compaction; an in-run segment end leaves the run open.
      const op = snapshot.operation;
      if (op === null || op.id !== event.runId || op.kind !== "compaction") return snapshot;
      const { status, error, endedAt, agent } = event;
      const lastResult = resultRecord(op, "compaction", status, error, op.fromTipId, snapshot.tipId, endedAt, agent);
      return { ...snapshot, lastResult, operation: null };
    }
    case "navigation_end":
      return { rebase: true };
    case "fault":
      return snapshot.faulted ? snapshot : { ...snapshot, faulted: true };
    case "lane_created":
    case "turn_start":
    case "turn_end":
    case "settings_update":
    case "value_update":
    case "handler_error":
      return snapshot;
  }
}

function openOperation(snapshot: LaneSnapshot, id: string, kind: OperationKind, startedAt: number): LaneSnapshot {
  return { ...snapshot, operation: { id, kind, startedAt, fromTipId: snapshot.tipId, status: "open", runningTools: [] } };
}

/** Applies `update` to the open operation when its id matches; returns the input itself when nothing changes. */
function updateOperation(
  snapshot: LaneSnapshot,
  operationId: string,
  update: (op: SnapshotOperation) => SnapshotOperation,
): LaneSnapshot {
  const op = snapshot.operation;
  if (op === null || op.id !== operationId) return snapshot;
  const next = update(op);
  return next === op ? snapshot : { ...snapshot, operation: next };
}

function addEntry(snapshot: LaneSnapshot, entry: Entry): LaneSnapshot {
  let operation = snapshot.operation;
  if (operation !== null && entry.type === "message" && entry.message.role === "toolResult") {
    // The placed result moves the tool's presentation from runningTools into the transcript.
    const toolCallId = entry.message.toolCallId;
    const runningTools = operation.runningTools.filter((r) => r.toolCallId !== toolCallId);
    if (runningTools.length !== operation.runningTools.length) operation = { ...operation, runningTools };
  }
  // A compaction starts a new transcript; otherwise the tail may outgrow the snapshot bounds.
  const { transcript, olderEntries } =
    entry.type === "compaction" ? boundTranscript([entry], undefined) : boundTranscript([...snapshot.transcript, entry], snapshot.olderEntries);
  const stats =
    entry.type === "message" ? { ...snapshot.stats, messageCount: snapshot.stats.messageCount + 1 } : snapshot.stats;
  const next: LaneSnapshot = { ...snapshot, transcript, tipId: entry.id, stats, operation };
  if (olderEntries) next.olderEntries = olderEntries;
  else delete next.olderEntries;
  return next;
}

function resultRecord(
  op: SnapshotOperation,
  kind: OperationKind,
  status: OperationStatus,
  error: OperationError | undefined,
  fromTipId: string | null,
  tipId: string | null,
  endedAt: number,
  agent: AgentVersionRef | undefined,
): OperationResultRecord {
  return {
    operationId: op.id,
    kind,
    status,
    ...(error !== undefined ? { error } : {}),
    fromTipId,
    tipId,
    startedAt: op.startedAt,
    endedAt,
    ...(agent !== undefined && { agent }),
  };
}

/** Returns the input configuration itself when the value does not have the property's shape. */
function applyConfig(
  configuration: LaneConfiguration,
  property: "model" | "thinkingLevel" | "activeTools",
  value: JsonValue,
): LaneConfiguration {
  switch (property) {
    case "model": {
      const model = asModelIdentity(value);
      return model === undefined ? configuration : { ...configuration, model };
    }
    case "thinkingLevel": {
      const thinkingLevel = asThinkingLevel(value);
      return thinkingLevel === undefined ? configuration : { ...configuration, thinkingLevel };
    }
    case "activeTools": {
      const activeToolNames = asStringArray(value);
      return activeToolNames === undefined ? configuration : { ...configuration, activeToolNames };
    }
  }
}

function asModelIdentity(value: JsonValue): ModelIdentity | undefined {
  if (!isJsonObject(value)) return undefined;
  const { provider, modelId } = value;
  if (typeof provider !== "string" || typeof modelId !== "string") return undefined;
  return { provider, modelId };
}

function asThinkingLevel(value: JsonValue): ThinkingLevel | undefined {
  return THINKING_LEVELS.find((level) => level === value);
}

function asStringArray(value: JsonValue): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const names: string[] = [];
  for (const item of value) {
    if (typeof item !== "string") return undefined;
    names.push(item);
  }
  return names;
}
