import type { Context } from "@earendil-works/pi-ai";
import type { AgentMessage } from "../../schema/messages.ts";
import type { CompactionPreparation } from "./preparation.ts";

// The default summarizer (reference §6.3): the model reads the conversation as text and writes a
// structured checkpoint summary; it must not continue the conversation. A compaction with a
// previous summary asks for an update that merges the new messages into it. A split turn adds a
// second request for the turn's prefix, whose summary is appended to the history summary.

export const SUMMARIZATION_SYSTEM_PROMPT =
  "You are a context summarization assistant. You read a conversation between a user and an AI assistant and write a " +
  "structured summary in exactly the format asked for. Do not continue the conversation and do not answer any question " +
  "in it: output only the summary.";

const FORMAT = `Use this format:

## Goal
[What the user is trying to accomplish]

## Constraints & Preferences
- [Requirements, constraints and preferences the user stated]

## Progress
### Done
- [Completed work]
### In Progress
- [Current work]
### Blocked
- [Open problems, if any]

## Key Decisions
- **[Decision]**: [Rationale]

## Next Steps
1. [What should happen next]

## Critical Context
- [Data, file paths, names and references needed to continue]

Keep each section concise and preserve exact file paths, function names and error messages.`;

const FRESH_PROMPT = `The messages above are a conversation to summarize. Write a structured context checkpoint summary that another assistant can use to continue the work.

${FORMAT}`;

const UPDATE_PROMPT = `The messages above are NEW conversation messages to merge into the existing summary in <previous-summary>. Update the summary: keep everything that still holds, add new progress, decisions and context, move finished items from "In Progress" to "Done", and update "Next Steps".

${FORMAT}`;

const TURN_PREFIX_PROMPT = `This is the PREFIX of a turn too large to keep whole. Its SUFFIX (the most recent work) is kept verbatim. Summarize the prefix as context for that suffix:

## Original Request
[What the user asked for in this turn]

## Early Progress
- [Decisions and work done in the prefix]

## Context for Suffix
- [What is needed to understand the kept suffix]

Be concise.`;

/** The joiner between the history summary and a split turn's prefix summary. */
export const TURN_PREFIX_HEADING = "\n\n---\n\n**Turn context (split turn):**\n\n";

export type SummaryRequestKind = "history" | "turn_prefix" | "branch";

export interface SummaryRequest {
  kind: SummaryRequestKind;
  context: Context;
}

/**
 * The nested requests of one compaction attempt, in order: the history summary (fresh or update)
 * when there are messages to summarize, then the turn prefix of a split turn.
 */
export function summaryRequests(preparation: CompactionPreparation, customInstructions?: string): SummaryRequest[] {
  const requests: SummaryRequest[] = [];
  if (preparation.messagesToSummarize.length > 0) {
    const previous = preparation.previousSummary;
    const prompt = previous === undefined ? FRESH_PROMPT : UPDATE_PROMPT;
    const parts = [conversationBlock(preparation.messagesToSummarize)];
    if (previous !== undefined) parts.push(`<previous-summary>\n${previous}\n</previous-summary>`);
    parts.push(withInstructions(prompt, customInstructions));
    requests.push({ kind: "history", context: userRequest(parts.join("\n\n")) });
  }
  if (preparation.isSplitTurn && preparation.turnPrefixMessages.length > 0) {
    const text = [conversationBlock(preparation.turnPrefixMessages), withInstructions(TURN_PREFIX_PROMPT, customInstructions)].join("\n\n");
    requests.push({ kind: "turn_prefix", context: userRequest(text) });
  }
  return requests;
}

/**
 * The compaction's summary from the requests' texts (in `summaryRequests` order): the history
 * summary, or the previous summary when only a turn prefix was summarized, then the prefix.
 */
export function combineSummaries(preparation: CompactionPreparation, texts: readonly { kind: SummaryRequestKind; text: string }[]): string {
  const history = texts.find((part) => part.kind === "history")?.text ?? preparation.previousSummary ?? "No prior history.";
  const prefix = texts.find((part) => part.kind === "turn_prefix")?.text;
  return prefix === undefined ? history : `${history}${TURN_PREFIX_HEADING}${prefix}`;
}

function withInstructions(prompt: string, customInstructions: string | undefined): string {
  return customInstructions === undefined || customInstructions.trim() === "" ? prompt : `${prompt}\n\nAdditional focus: ${customInstructions}`;
}

function userRequest(text: string): Context {
  return { systemPrompt: SUMMARIZATION_SYSTEM_PROMPT, messages: [{ role: "user", content: [{ type: "text", text }], timestamp: 0 }] };
}

/** The conversation as plain text: the model summarizes it instead of taking part in it. */
export function conversationBlock(messages: readonly AgentMessage[]): string {
  return `<conversation>\n${messages.map(serializeMessage).join("\n\n")}\n</conversation>`;
}

function serializeMessage(message: AgentMessage): string {
  switch (message.role) {
    case "user":
      return `[User]: ${contentText(message.content)}`;
    case "custom":
      return `[${message.customType}]: ${contentText(message.content)}`;
    case "assistant": {
      const lines: string[] = [];
      for (const block of message.content) {
        if (block.type === "text") lines.push(`[Assistant]: ${block.text}`);
        else if (block.type === "thinking") lines.push(`[Assistant thinking]: ${block.thinking}`);
        else lines.push(`[Assistant tool call]: ${block.name}(${JSON.stringify(block.arguments)})`);
      }
      return lines.join("\n");
    }
    case "toolResult":
      return `[Tool result${message.isError ? " (error)" : ""} ${message.toolName}]: ${contentText(message.content)}`;
    case "compactionSummary":
      return `[Earlier summary]: ${message.summary}`;
    case "branchSummary":
      return `[Summary of a left branch]: ${message.summary}`;
    case "bashExecution":
      return `[Ran \`${message.command}\`]: ${message.output}`;
  }
}

function contentText(content: string | readonly ({ type: "text"; text: string } | { type: "image" })[]): string {
  if (typeof content === "string") return content;
  return content.map((block) => (block.type === "text" ? block.text : "[image]")).join("");
}
