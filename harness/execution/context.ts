import type { Message } from "@earendil-works/pi-ai";
import type { Entry } from "../../schema/entries.ts";
import type { AgentMessage, AssistantMessage, TextContent } from "../../schema/messages.ts";

// Provider-context projection (reference §6.4): the compaction-bounded branch path becomes the
// harness message list, and the default converter turns harness roles into provider messages.

/** Turns custom entries of one customType into messages; without a projector they are invisible. */
export type EntryProjector = (entry: Extract<Entry, { type: "custom" }>) => AgentMessage[] | undefined;
export type EntryProjectors = Readonly<Record<string, EntryProjector>>;

/** Assistant responses that failed, were aborted or deferred stay in history but leave the context. */
export function isContextAssistant(message: AssistantMessage): boolean {
  return message.stopReason !== "error" && message.stopReason !== "aborted" && message.stopReason !== "deferred";
}

/** Whether an entry would place anything into the provider context (the "projects" test of §3.6). */
export function projects(entry: { type: "message" } | { type: "custom"; customType: string }, projectors: EntryProjectors): boolean {
  return entry.type === "message" || projectors[entry.customType] !== undefined;
}

/** Harness messages from the bounded path, oldest first (the newest compaction, if any, first). */
export function projectEntries(path: readonly Entry[], projectors: EntryProjectors = {}): AgentMessage[] {
  const messages: AgentMessage[] = [];
  for (const entry of path) {
    switch (entry.type) {
      case "compaction":
        messages.push(
          { role: "compactionSummary", summary: entry.summary, tokensBefore: entry.tokensBefore, timestamp: entry.timestamp },
          ...entry.retainedTail,
        );
        break;
      case "branch_summary":
        messages.push({ role: "branchSummary", summary: entry.summary, fromId: entry.fromId, timestamp: entry.timestamp });
        break;
      case "custom":
        messages.push(...(projectors[entry.customType]?.(entry) ?? []));
        break;
      case "message":
        if (entry.message.role !== "assistant" || isContextAssistant(entry.message)) messages.push(entry.message);
        break;
    }
  }
  return messages;
}

const text = (value: string): TextContent => ({ type: "text", text: value });

/** The default `toProviderMessages`: harness roles become user messages the provider understands. */
export function toProviderMessages(messages: readonly AgentMessage[]): Message[] {
  return messages.map((message): Message => {
    switch (message.role) {
      case "user":
        return { role: "user", content: message.content, timestamp: message.timestamp };
      case "assistant":
        return { ...message, role: "assistant" };
      case "toolResult":
        return {
          role: "toolResult",
          toolCallId: message.toolCallId,
          toolName: message.toolName,
          content: message.content,
          isError: message.isError,
          timestamp: message.timestamp,
        };
      case "compactionSummary":
        return userText(`The conversation history before this point was compacted into this summary:\n\n<summary>\n${message.summary}\n</summary>`, message.timestamp);
      case "branchSummary":
        return userText(`A branch of this conversation was left; this summarizes it:\n\n<summary>\n${message.summary}\n</summary>`, message.timestamp);
      case "custom":
        return { role: "user", content: typeof message.content === "string" ? message.content : [...message.content], timestamp: message.timestamp };
      case "bashExecution":
        return userText(`Ran \`${message.command}\`\n\n${message.output}`, message.timestamp);
    }
  });
}

function userText(value: string, timestamp: number): Message {
  return { role: "user", content: [text(value)], timestamp };
}

