import type { AgentMessage, AssistantMessage } from "../../schema/messages.ts";
import type { Usage } from "../../schema/usage.ts";

// The context-size estimate of reference §6.1: the provider's own count for everything up to the
// newest valid assistant response, plus about four characters per token for every message after it.

/** An image counts as this many characters (about 1,200 tokens), whatever its size. */
const IMAGE_CHARS = 4800;

/** The estimated tokens of one harness message (chars / 4, rounded up). */
export function estimateMessageTokens(message: AgentMessage): number {
  return Math.ceil(messageChars(message) / 4);
}

function messageChars(message: AgentMessage): number {
  switch (message.role) {
    case "user":
    case "custom":
      return typeof message.content === "string" ? message.content.length : blocksChars(message.content);
    case "assistant":
      return message.content.reduce(
        (sum, block) =>
          sum + (block.type === "text" ? block.text.length : block.type === "thinking" ? block.thinking.length : block.name.length + JSON.stringify(block.arguments).length),
        0,
      );
    case "toolResult":
      return blocksChars(message.content);
    case "compactionSummary":
    case "branchSummary":
      return message.summary.length;
    case "bashExecution":
      return message.command.length + message.output.length;
  }
}

function blocksChars(blocks: readonly ({ type: "text"; text: string } | { type: "image" })[]): number {
  return blocks.reduce((sum, block) => sum + (block.type === "text" ? block.text.length : IMAGE_CHARS), 0);
}

/** The tokens a provider counted for a response (the context it saw); undefined when it counted none. */
export function usageTokens(usage: Usage): number | undefined {
  const total = usage.totalTokens > 0 ? usage.totalTokens : usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
  return total > 0 ? total : undefined;
}

/** A response whose usage describes the context it saw: not failed, not aborted, with tokens. */
function validUsage(message: AgentMessage): message is AssistantMessage {
  return message.role === "assistant" && message.stopReason !== "error" && message.stopReason !== "aborted" && usageTokens(message.usage) !== undefined;
}

/**
 * The context size of a message list, oldest first: the newest valid assistant usage, plus an
 * estimate of every message after it; with no usage at all, every message is estimated.
 */
export function estimateContextTokens(
  messages: readonly AgentMessage[],
  /** Responses before this index saw another context (a compaction's retained tail): never an anchor. */
  firstAnchor = 0,
): number {
  let index = messages.length - 1;
  while (index >= firstAnchor) {
    const message = messages[index];
    if (message && validUsage(message)) break;
    index--;
  }
  if (index < firstAnchor) index = -1;
  const anchor = index >= 0 ? messages[index] : undefined;
  const counted = anchor && anchor.role === "assistant" ? (usageTokens(anchor.usage) ?? 0) : 0;
  return messages.slice(index + 1).reduce((sum, message) => sum + estimateMessageTokens(message), counted);
}

/**
 * `shouldCompact` (reference §6.1): enabled, and the context leaves less than the reserve free in
 * the model's window.
 */
export function shouldCompact(contextTokens: number, contextWindow: number, settings: { enabled: boolean; reserveTokens: number }): boolean {
  return settings.enabled && contextTokens > contextWindow - settings.reserveTokens;
}
