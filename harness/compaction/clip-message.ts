import type { AgentMessage } from "../../schema/messages.ts";
import type { JsonValue } from "../../schema/json.ts";
import { estimateMessageTokens } from "./tokens.ts";

// A message cut down to a token budget, its texts kept from their beginning with a note of what
// was left out. A summary reads a message too large for its whole budget this way rather than
// leaving it out: a summary of nothing would lose the very work it is asked to keep.

/**
 * `message` with its texts cut so its estimate (tokens.ts) is at most `tokenBudget`; undefined when
 * even its empty shape (names, keys) is larger. Images become the text "[image]", as the
 * summarizer writes them anyway.
 */
export function clipMessage(message: AgentMessage, tokenBudget: number): AgentMessage | undefined {
  let allowance = tokenBudget * 4;
  for (;;) {
    const clipped = clipTexts(message, allowance);
    const over = estimateMessageTokens(clipped) - tokenBudget;
    if (over <= 0) return clipped;
    if (allowance === 0) return undefined;
    // What the texts do not account for (keys, quotes, names) comes off the texts' allowance.
    allowance = Math.max(0, allowance - over * 4);
  }
}

function clipTexts(message: AgentMessage, allowance: number): AgentMessage {
  const cut = clipper(allowance);
  switch (message.role) {
    case "user":
    case "custom":
      return { ...message, content: typeof message.content === "string" ? cut(message.content) : message.content.map((block) => ({ type: "text" as const, text: block.type === "text" ? cut(block.text) : cut("[image]") })) };
    case "toolResult":
      return { ...message, content: message.content.map((block) => ({ type: "text" as const, text: block.type === "text" ? cut(block.text) : cut("[image]") })) };
    case "assistant":
      return {
        ...message,
        content: message.content.map((block) => {
          if (block.type === "text") return { ...block, text: cut(block.text) };
          if (block.type === "thinking") return { ...block, thinking: cut(block.thinking) };
          const args: Record<string, JsonValue> = {};
          for (const [key, value] of Object.entries(block.arguments)) args[key] = typeof value === "string" ? cut(value) : fitsAsIs(value, cut);
          return { ...block, arguments: args };
        }),
      };
    case "compactionSummary":
    case "branchSummary":
      return { ...message, summary: cut(message.summary) };
    case "bashExecution":
      return { ...message, command: cut(message.command), output: cut(message.output) };
  }
}

/** A structured argument stays whole when its text fits, else becomes its cut JSON text. */
function fitsAsIs(value: JsonValue, cut: (text: string) => string): JsonValue {
  const text = JSON.stringify(value);
  const kept = cut(text);
  return kept === text ? value : kept;
}

/** Cuts texts in order out of one shared allowance of characters. */
function clipper(allowance: number): (text: string) => string {
  let left = allowance;
  return (text) => {
    if (text.length <= left) {
      left -= text.length;
      return text;
    }
    const note = ` [… ${text.length} characters left out]`;
    if (left <= note.length) {
      left = 0;
      return "";
    }
    const kept = text.slice(0, left - note.length);
    left = 0;
    return `${kept} [… ${text.length - kept.length} characters left out]`;
  };
}
