import type { Storage } from "../../harness/session/storage.ts";
import { PROMPT_ANSWER_LIMITS } from "../../schema/lane-answers.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { Entry } from "../../schema/entries.ts";
import type { AgentMessage } from "../../schema/messages.ts";

/** The messages a settled operation placed on its branch, newest kept first within the bounds. */
export interface AppendedMessages {
  /** Oldest first; the last one is the newest message the operation placed. */
  messages: AgentMessage[];
  /** True when older messages of the operation were left out by a bound. */
  messagesTruncated: boolean;
}

const encoder = new TextEncoder();

/**
 * Reads the message entries between `record.fromTipId` (exclusive) and `record.tipId` (inclusive)
 * with one bounded branch walk from the tip that stops at `fromTipId` (structure only: ids and
 * types), then loads payloads newest first until a bound is reached, so an operation with many or
 * huge messages costs at most the bound plus one entry. Synchronous: nothing awaits between reads.
 *
 * `placed` is the same span from the lane's warm context (harness lane `placedBetween`), when it
 * still holds it: the run's own entries, already in memory, so the answer costs no read (the walk
 * and its loads were ~10% of a hosted turn's CPU). Both sources give the same answer.
 */
export function appendedMessages(storage: Pick<Storage, "scanBranchStructure" | "getEntries">, record: OperationResultRecord, placed?: readonly Entry[]): AppendedMessages {
  if (record.tipId === null || record.tipId === record.fromTipId) return { messages: [], messagesTruncated: false };
  if (placed) {
    const newestFirst = placed.flatMap((entry) => (entry.type === "message" ? [entry.message] : [])).reverse();
    return withinBounds(newestFirst, (message) => message);
  }
  // The stop entry itself is part of a walk's answer (inclusive stop), hence one more.
  const path = storage
    .scanBranchStructure({
      start: record.tipId,
      ...(record.fromTipId !== null && { stopAtId: record.fromTipId }),
      type: "message",
      order: "newestFirst",
      limit: PROMPT_ANSWER_LIMITS.messages + 1,
    })
    .filter((entry) => entry.id !== record.fromTipId);
  return withinBounds(path, ({ id }) => {
    const entry = storage.getEntries([id]).get(id);
    return entry?.type === "message" ? entry.message : undefined;
  });
}

/** Newest first, at most PROMPT_ANSWER_LIMITS of them (the newest always), answered oldest first. */
function withinBounds<T>(newestFirstCandidates: readonly T[], messageOf: (candidate: T) => AgentMessage | undefined): AppendedMessages {
  const { messages: maxMessages, bytes: maxBytes } = PROMPT_ANSWER_LIMITS;
  const newestFirst: AgentMessage[] = [];
  let bytes = 0;
  let truncated = newestFirstCandidates.length > maxMessages;
  for (const candidate of newestFirstCandidates.slice(0, maxMessages)) {
    const message = messageOf(candidate);
    if (message === undefined) continue;
    const size = encoder.encode(JSON.stringify(message)).byteLength;
    if (newestFirst.length > 0 && bytes + size > maxBytes) {
      truncated = true;
      break;
    }
    newestFirst.push(message);
    bytes += size;
  }
  return { messages: newestFirst.reverse(), messagesTruncated: truncated };
}

/** The lane's warm copy of what `record`'s operation placed, when it still has it. */
export function placedBy(lane: Pick<AgentLane, "placedBetween">, record: OperationResultRecord): readonly Entry[] | undefined {
  return record.tipId === null ? undefined : lane.placedBetween(record.fromTipId, record.tipId);
}
