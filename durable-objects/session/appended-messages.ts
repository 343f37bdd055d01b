import type { Storage } from "../../harness/session/storage.ts";
import { PROMPT_ANSWER_LIMITS } from "../../schema/lane-api.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";
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
 */
export function appendedMessages(storage: Pick<Storage, "scanBranchStructure" | "getEntries">, record: OperationResultRecord): AppendedMessages {
  if (record.tipId === null || record.tipId === record.fromTipId) return { messages: [], messagesTruncated: false };
  const { messages: maxMessages, bytes: maxBytes } = PROMPT_ANSWER_LIMITS;
  // The stop entry itself is part of a walk's answer (inclusive stop), hence one more.
  const path = storage
    .scanBranchStructure({
      start: record.tipId,
      ...(record.fromTipId !== null && { stopAtId: record.fromTipId }),
      type: "message",
      order: "newestFirst",
      limit: maxMessages + 1,
    })
    .filter((entry) => entry.id !== record.fromTipId);
  const newestFirst: AgentMessage[] = [];
  let bytes = 0;
  let truncated = path.length > maxMessages;
  for (const { id } of path.slice(0, maxMessages)) {
    const entry = storage.getEntries([id]).get(id);
    if (entry?.type !== "message") continue;
    const size = encoder.encode(JSON.stringify(entry.message)).byteLength;
    if (newestFirst.length > 0 && bytes + size > maxBytes) {
      truncated = true;
      break;
    }
    newestFirst.push(entry.message);
    bytes += size;
  }
  return { messages: newestFirst.reverse(), messagesTruncated: truncated };
}
