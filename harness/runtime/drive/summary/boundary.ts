import type { NewEntry } from "../../../../schema/entries.ts";
import type { JsonValue } from "../../../../schema/json.ts";
import type { HarnessEvent, OperationError, OperationStatus } from "../../../../schema/lane.ts";
import type { AgentMessage } from "../../../../schema/messages.ts";
import type { Usage } from "../../../../schema/usage.ts";
import { branchTip, entryLabel } from "../../../session/builtin-addresses.ts";
import { PAYLOAD_LIMIT_BYTES, type Write } from "../../../session/storage.ts";
import { utf8Length } from "../../../../schema/utf8.ts";
import { zeroUsage } from "../../../session/usage.ts";
import { insertEntry, setValue } from "../../../session/writes.ts";
import type { Committed } from "../../lane-command.ts";
import type { LaneProjection } from "../../lane-state.ts";
import type { CheckpointData, OperationState, SummaryTask } from "../../types.ts";
import { decideOnLine } from "../run/checkpoint.ts";
import type { Pass } from "../pass.ts";
import { scopeOf } from "../scope.ts";
import type { TransitionPlan } from "../transition.ts";

/** A structural summary's result, whoever produced it (the model, or `before_compaction` / `before_navigation`). */
export type SummaryResult =
  | { kind: "compaction"; summary: string; retainedTail: AgentMessage[]; tokensBefore: number; details?: JsonValue; usage?: Usage }
  | { kind: "branch_summary"; summary: string; details: { readFiles: string[]; modifiedFiles: string[] }; usage?: Usage };

export type SummaryOutcome =
  | { kind: "success"; result: SummaryResult; fromHook: boolean; resultEntryId: string }
  | { kind: "declined" }
  | { kind: "failed"; error: OperationError };

/** What the deciding or settling commit carries besides the boundary (usage rows and their events). */
export interface SummarySettlement {
  writes: Write[];
  events?: (done: Committed | undefined) => HarnessEvent[];
}

/**
 * The ResultBoundary switch (reference §3.4), in this one place: how a summary's outcome ends the
 * task. A boundary reached under cancellation never takes its continuation: it settles what was
 * admitted (usage rows) and ends aborted, placing nothing.
 *
 * Restore faults an operation whose intent does not admit its leaf, so a navigation meets only
 * `commit_navigation`, a compaction only `finish`, a run only `resume_checkpoint`.
 */
export function boundaryPlan(
  pass: Pass,
  task: SummaryTask,
  current: OperationState,
  lane: LaneProjection,
  outcome: SummaryOutcome,
  settlement: SummarySettlement = { writes: [] },
): TransitionPlan {
  const boundary = task.boundary;
  if (current.control.status === "cancel_requested") {
    const segment = boundary.kind === "resume_checkpoint" ? [segmentEnd(pass, task, "aborted")] : [];
    return { kind: "finish", writes: settlement.writes, status: "aborted", events: (done) => [...(settlement.events?.(done) ?? []), ...segment] };
  }
  switch (boundary.kind) {
    case "finish":
      return finishCompaction(pass.lane.name, lane, outcome, settlement);
    case "resume_checkpoint":
      return resumeCheckpoint(pass, task, boundary.resumeAfter, current, lane, outcome, settlement);
    case "commit_navigation":
      return commitNavigation(pass, boundary, lane, outcome, settlement);
  }
}

/**
 * Summarized navigation: success commits at once the move to the target, the branch-summary entry
 * under it (the tip moves on to the summary), and the target's label, then completes; a decline or
 * a failure moves nothing. `navigation_end` (the terminal event) tells watchers to resnapshot.
 */
function commitNavigation(
  pass: Pass,
  boundary: Extract<SummaryTask["boundary"], { kind: "commit_navigation" }>,
  lane: LaneProjection,
  outcome: SummaryOutcome,
  settlement: SummarySettlement,
): TransitionPlan {
  const events = settlement.events;
  if (outcome.kind === "declined") return { kind: "finish", writes: settlement.writes, status: "declined", ...(events && { events }) };
  if (outcome.kind === "failed") return { kind: "finish", writes: settlement.writes, status: "failed", error: outcome.error, ...(events && { events }) };
  const { result, resultEntryId } = outcome;
  const { targetId, label } = boundary;
  if (result.kind !== "branch_summary" || targetId === null) throw new Error("Invariant: a summarized navigation needs a branch summary and a target");
  const laneName = pass.lane.name;
  const entry: NewEntry = {
    id: resultEntryId,
    parentId: targetId,
    type: "branch_summary",
    fromId: lane.operation?.meta.sourceTipId ?? null,
    summary: result.summary,
    details: result.details,
    ...(result.usage !== undefined && { usage: result.usage }),
    fromHook: outcome.fromHook,
  };
  const bytes = utf8Length(JSON.stringify(entry));
  if (bytes > PAYLOAD_LIMIT_BYTES) {
    const error = { code: "summary_too_large", message: `The branch summary entry would be ${bytes} bytes; at most ${PAYLOAD_LIMIT_BYTES} can be stored` };
    return { kind: "finish", writes: settlement.writes, status: "failed", error, ...(events && { events }) };
  }
  return {
    kind: "finish",
    writes: [...settlement.writes, insertEntry(entry), setValue(branchTip(laneName), entry.id), ...(label !== undefined ? [setValue(entryLabel(targetId), label)] : [])],
    status: "completed",
    patch: { tipId: entry.id },
    events: (done) => [
      ...(events?.(done) ?? []),
      ...entryAdded(laneName, done, entry.id),
      ...(label !== undefined ? [{ type: "value_update" as const, value: "entry_label" as const, targetId, label }] : []),
    ],
  };
}

/** Standalone compaction: success places the compaction entry on the tip and completes; decline and failure move nothing. */
function finishCompaction(laneName: string, lane: LaneProjection, outcome: SummaryOutcome, settlement: SummarySettlement): TransitionPlan {
  const events = settlement.events;
  switch (outcome.kind) {
    case "declined":
      return { kind: "finish", writes: settlement.writes, status: "declined", ...(events && { events }) };
    case "failed":
      return { kind: "finish", writes: settlement.writes, status: "failed", error: outcome.error, ...(events && { events }) };
    case "success": {
      const entry = compactionEntry(outcome, lane.tipId);
      if ("error" in entry) return { kind: "finish", writes: settlement.writes, status: "failed", error: entry.error, ...(events && { events }) };
      return {
        kind: "finish",
        writes: [...settlement.writes, insertEntry(entry), setValue(branchTip(laneName), entry.id)],
        status: "completed",
        patch: { tipId: entry.id },
        events: (done) => [...(events?.(done) ?? []), ...entryAdded(laneName, done, entry.id)],
      };
    }
  }
}

/**
 * In-run compaction (threshold or overflow): success, or a threshold decline, publishes in one
 * commit (the compaction entry on the tip, then the boundary planner with the threshold disabled:
 * eligible inbox items placed and the successor, or a resting `checkpoint` when the finish needs
 * `before_run_end`); an overflow decline (`compaction_declined`) or a failure ends the segment and
 * fails the run, leaving queued input untouched.
 */
function resumeCheckpoint(
  pass: Pass,
  task: SummaryTask,
  resumeAfter: CheckpointData,
  current: OperationState,
  lane: LaneProjection,
  outcome: SummaryOutcome,
  settlement: SummarySettlement,
): TransitionPlan {
  const fail = (error: OperationError, status: "failed" | "declined"): TransitionPlan => ({
    kind: "finish",
    writes: settlement.writes,
    status: "failed",
    error,
    events: (done) => [...(settlement.events?.(done) ?? []), segmentEnd(pass, task, status, { error })],
  });
  if (outcome.kind === "failed") return fail(outcome.error, "failed");
  if (outcome.kind === "declined" && task.reason === "overflow") {
    return fail({ code: "compaction_declined", message: "before_compaction declined the overflow compaction; the context still exceeds the model's window" }, "declined");
  }
  const entry = outcome.kind === "success" ? compactionEntry(outcome, lane.tipId) : undefined;
  if (entry && "error" in entry) return fail(entry.error, "failed");
  const laneName = pass.lane.name;
  const entryWrites = entry ? [insertEntry(entry), setValue(branchTip(laneName), entry.id)] : [];
  const published: LaneProjection = entry ? { ...lane, tipId: entry.id } : lane;
  const segment = (done: Committed | undefined): HarnessEvent[] => [
    ...(settlement.events?.(done) ?? []),
    ...(entry ? entryAdded(laneName, done, entry.id) : []),
    segmentEnd(pass, task, entry ? "completed" : "declined", entry ? { entryId: entry.id } : {}),
  ];
  const decision = decideOnLine(pass.core, pass, published, current, resumeAfter);
  if (decision.kind === "mediate" || decision.plan.kind === "return") {
    return {
      kind: "commit",
      writes: [...settlement.writes, ...entryWrites],
      state: { ...scopeOf(current), at: "checkpoint", ...resumeAfter, thresholdDone: true },
      patch: { tipId: published.tipId },
      events: segment,
    };
  }
  const plan = decision.plan;
  // The planner's own tip write (after placed input) supersedes the entry's.
  const movesTip = plan.writes.some((write) => write.kind === "value" && write.namespace === "pi.branch.tip");
  return {
    ...plan,
    writes: [...settlement.writes, ...(movesTip ? entryWrites.filter((write) => write.kind !== "value") : entryWrites), ...plan.writes],
    patch: { tipId: published.tipId, ...plan.patch },
    events: (done) => [...segment(done), ...(plan.events?.(done) ?? [])],
  };
}

/** The compaction entry of a successful summary, parented to the tip; an error when it cannot be stored. */
function compactionEntry(outcome: Extract<SummaryOutcome, { kind: "success" }>, parentId: string | null): CompactionEntryInput | { error: OperationError } {
  const { result, resultEntryId } = outcome;
  if (result.kind !== "compaction") throw new Error("Invariant: a compaction boundary needs a compaction result");
  const entry: CompactionEntryInput = {
    id: resultEntryId,
    parentId,
    type: "compaction",
    summary: result.summary,
    retainedTail: result.retainedTail,
    tokensBefore: result.tokensBefore,
    ...(result.details !== undefined && { details: result.details }),
    ...(result.usage !== undefined && { usage: result.usage }),
    fromHook: outcome.fromHook,
  };
  // The entry copies the retained tail: a result that cannot be stored fails the compaction
  // (nothing placed) rather than failing its commit on every retry of the pass.
  const bytes = utf8Length(JSON.stringify(entry));
  if (bytes > PAYLOAD_LIMIT_BYTES) {
    return { error: { code: "compaction_too_large", message: `The compaction entry would be ${bytes} bytes; at most ${PAYLOAD_LIMIT_BYTES} can be stored` } };
  }
  return entry;
}

type CompactionEntryInput = Extract<NewEntry, { type: "compaction" }>;

/**
 * The end of an in-run compaction segment (reference §5.2): the run stays open unless the same
 * commit ends it (its `run_end` follows). Also emitted when cancellation ends the run inside one.
 */
export function segmentEnd(pass: Pass, task: SummaryTask, status: OperationStatus, extra: { entryId?: string; error?: OperationError } = {}): HarnessEvent {
  return { type: "compaction_end", lane: pass.lane.name, runId: pass.operationId, reason: task.reason ?? "threshold", status, ...extra, endedAt: pass.core.clock() };
}

function entryAdded(lane: string, done: Committed | undefined, entryId: string): HarnessEvent[] {
  return (done?.entries ?? []).filter((placed) => placed.id === entryId).map((placed): HarnessEvent => ({ type: "entry_added", lane, entry: placed }));
}

/** The `usage` events of the rows a commit inserted. */
export function usageEvents(lane: string, done: Committed | undefined): HarnessEvent[] {
  return (done?.usage ?? []).map((row): HarnessEvent => ({ type: "usage", lane, row, totals: done?.commit.stats.usage ?? zeroUsage() }));
}
