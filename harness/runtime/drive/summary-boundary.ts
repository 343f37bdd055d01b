import type { NewEntry } from "../../../schema/entries.ts";
import type { JsonValue } from "../../../schema/json.ts";
import type { HarnessEvent, OperationError } from "../../../schema/lane.ts";
import type { AgentMessage } from "../../../schema/messages.ts";
import type { Usage } from "../../../schema/usage.ts";
import { branchTip } from "../../session/builtin-addresses.ts";
import { PAYLOAD_LIMIT_BYTES, type Write } from "../../session/storage.ts";
import { utf8Length } from "../../../schema/utf8.ts";
import { zeroUsage } from "../../session/usage.ts";
import { insertEntry, setValue } from "../../session/writes.ts";
import type { Committed } from "../lane-command.ts";
import type { LaneProjection } from "../lane-state.ts";
import type { OperationState, SummaryTask } from "../types.ts";
import type { TransitionPlan } from "./transition.ts";

/** A structural summary's result, whoever produced it (the model, or `before_compaction`). */
export interface SummaryResult {
  summary: string;
  retainedTail: AgentMessage[];
  tokensBefore: number;
  details?: JsonValue;
  usage?: Usage;
}

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
 * Only `finish` (standalone compaction) is built. `resume_checkpoint` (threshold and overflow
 * compaction inside a run) and `commit_navigation` (summarized navigation) are entered only by
 * acceptance paths this build refuses (a run never enters `summary.*`; summarized navigation is
 * refused with UnsupportedOperation), and restore faults an operation whose intent does not admit
 * its leaf; meeting one here is an invariant violation.
 */
export function boundaryPlan(
  laneName: string,
  task: SummaryTask,
  current: OperationState,
  lane: LaneProjection,
  outcome: SummaryOutcome,
  settlement: SummarySettlement = { writes: [] },
): TransitionPlan {
  if (current.control.status === "cancel_requested") {
    return { kind: "finish", writes: settlement.writes, status: "aborted", ...(settlement.events && { events: settlement.events }) };
  }
  const boundary = task.boundary;
  switch (boundary.kind) {
    case "finish":
      return finishCompaction(laneName, lane, outcome, settlement);
    case "resume_checkpoint":
    case "commit_navigation":
      throw new Error(`Invariant: the ${boundary.kind} summary boundary is not built (no acceptance in this build enters it)`);
  }
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
      const { result, resultEntryId } = outcome;
      const entry: NewEntry = {
        id: resultEntryId,
        parentId: lane.tipId,
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
        const error = { code: "compaction_too_large", message: `The compaction entry would be ${bytes} bytes; at most ${PAYLOAD_LIMIT_BYTES} can be stored` };
        return { kind: "finish", writes: settlement.writes, status: "failed", error, ...(events && { events }) };
      }
      return {
        kind: "finish",
        writes: [...settlement.writes, insertEntry(entry), setValue(branchTip(laneName), resultEntryId)],
        status: "completed",
        patch: { tipId: resultEntryId },
        events: (done) => [
          ...(events?.(done) ?? []),
          ...(done?.entries ?? []).filter((placed) => placed.id === resultEntryId).map((placed): HarnessEvent => ({ type: "entry_added", lane: laneName, entry: placed })),
        ],
      };
    }
  }
}

/** The `usage` events of the rows a commit inserted. */
export function usageEvents(lane: string, done: Committed | undefined): HarnessEvent[] {
  return (done?.usage ?? []).map((row): HarnessEvent => ({ type: "usage", lane, row, totals: done?.commit.stats.usage ?? zeroUsage() }));
}
