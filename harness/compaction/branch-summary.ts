import type { Entry } from "../../schema/entries.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import { projectEntries, type EntryProjectors } from "../execution/context.ts";
import type { JsonValue } from "../../schema/json.ts";
import { clipMessage } from "./clip-message.ts";
import { fileOpsOf, type FileOps } from "./preparation.ts";
import { conversationBlock, SUMMARIZATION_SYSTEM_PROMPT, type SummaryRequest } from "./summarizer.ts";
import { estimateMessageTokens } from "./tokens.ts";

// Branch summarization on navigation (reference §6.5): when a lane leaves a branch for another
// point of the tree, the work on the branch it abandons (after the common ancestor) is summarized
// into a `branch_summary` entry placed under the target, so the model keeps what was learned there.

/**
 * The durable preparation (`pi.op.preparation/{op}:{taskId}`): where the abandoned branch starts and
 * ends, never its messages (entries are write-once, so they read back the same).
 */
export interface StoredBranchPreparation {
  kind: "branch_summary";
  /** The tip the lane leaves. */
  fromTipId: string;
  /** The newest entry the tip and the target share (null: they share none, the whole path is left). */
  ancestorId: string | null;
}

export interface BranchPreparation {
  /** The abandoned branch's messages, oldest first, newest kept when the budget cuts. */
  messages: AgentMessage[];
  fileOps: FileOps;
  /** Their estimated size. */
  tokensBefore: number;
  /** True when older messages were left out to stay within the budget. */
  truncated: boolean;
}

/**
 * The abandoned branch as the summarizer reads it, from its entries newest first (the tip down to,
 * not including, the common ancestor), each read as the model's context reads it
 * (execution/context.ts): newest messages first until `tokenBudget` is spent. A compaction on the
 * way contributes what the model saw of everything before it, its retained tail and then its
 * summary, and ends the walk (§6.3: summary, retained tail, later entries). A newest message larger
 * than the whole budget is read from its beginning, cut to the budget (clip-message.ts).
 *
 * The file lists go on past the budget: every tool call of the branch names its files, and every
 * branch summary and compaction on the branch carries its `readFiles`/`modifiedFiles` forward, as a compaction carries its predecessor's, so
 * files touched before an earlier navigation are not forgotten by this one.
 */
export function prepareBranch(newestFirst: Iterable<Entry>, tokenBudget: number, projectors: EntryProjectors = {}): BranchPreparation {
  const newestMessagesFirst: AgentMessage[] = [];
  /**
   * Every message of the branch, whole, read or not: the budget bounds the text the model reads,
   * not which files the branch's tool calls touched (a cut message's calls still name theirs).
   */
  const read: AgentMessage[] = [];
  const carried: JsonValue[] = [];
  let tokens = 0;
  let truncated = false;
  for (const entry of newestFirst) {
    if ((entry.type === "branch_summary" || entry.type === "compaction") && entry.details !== undefined) carried.push(entry.details);
    const projected = projectEntries([entry], projectors).reverse();
    if (truncated) read.push(...projected);
    for (const [index, message] of (truncated ? [] : projected).entries()) {
      const size = estimateMessageTokens(message);
      if (tokens + size <= tokenBudget) {
        tokens += size;
        newestMessagesFirst.push(message);
        read.push(message);
        continue;
      }
      truncated = true;
      const clipped = newestMessagesFirst.length === 0 ? clipMessage(message, tokenBudget) : undefined;
      if (clipped) {
        tokens += estimateMessageTokens(clipped);
        newestMessagesFirst.push(clipped);
      }
      // This message and the entry's older ones are not read, but their files count.
      read.push(...projected.slice(index));
      break;
    }
    if (entry.type === "compaction") break;
  }
  const messages = newestMessagesFirst.reverse();
  return { messages, fileOps: fileOpsOf(carried, read), tokensBefore: tokens, truncated };
}

const BRANCH_PROMPT = `The messages above are a branch of a conversation that is being left for another point of the conversation. Summarize what was tried and learned on this branch, so that the work can continue from the other point without losing it.

Use this format:

## Goal
[What the user was trying to accomplish on this branch]

## What Was Done
- [Work done, approaches tried, and their results]

## Key Decisions and Findings
- **[Decision or finding]**: [Rationale or evidence]

## Open Ends
- [What was unfinished or still in question]

Keep each section concise and preserve exact file paths, function names and error messages.`;

/** The one request of a branch summary. */
export function branchSummaryRequest(preparation: BranchPreparation, customInstructions?: string): SummaryRequest {
  const prompt = customInstructions === undefined || customInstructions.trim() === "" ? BRANCH_PROMPT : `${BRANCH_PROMPT}\n\nAdditional focus: ${customInstructions}`;
  const text = `${conversationBlock(preparation.messages)}\n\n${prompt}`;
  return { kind: "branch", context: { systemPrompt: SUMMARIZATION_SYSTEM_PROMPT, messages: [{ role: "user", content: [{ type: "text", text }], timestamp: 0 }] } };
}
