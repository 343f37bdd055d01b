import type { AssistantMessage, Message, TranscriptContext, Usage } from "@earendil-works/pi-ai";
import type { ScriptUsage } from "./steps.ts";

// Deterministic usage of the scripted provider: about four characters per token, on the text the
// request carries (input) and the content the response holds (output); cost is zero. A step's
// `usage` numbers replace the defaults field by field.

const tokens = (chars: number): number => Math.ceil(chars / 4);

/** Input tokens of a request: the characters of every message's text, tool calls and declarations. */
export function estimateInputTokens(context: TranscriptContext): number {
  return tokens(context.messages.reduce((sum, message) => sum + messageChars(message), 0));
}

/** Output tokens of a response: its text, thinking and tool-call name plus JSON arguments. */
export function estimateOutputTokens(content: AssistantMessage["content"]): { output: number; reasoning: number } {
  let chars = 0;
  let thinking = 0;
  for (const block of content) {
    if (block.type === "text") chars += block.text.length;
    else if (block.type === "thinking") thinking += block.thinking.length;
    else chars += block.name.length + JSON.stringify(block.arguments).length;
  }
  return { output: tokens(chars) + tokens(thinking), reasoning: tokens(thinking) };
}

export interface UsageDefaults {
  input: number;
  output: number;
  reasoning?: number;
}

/** The step's numbers merged over the defaults; totals derived unless the step gives them. */
export function mergeUsage(defaults: UsageDefaults, step: ScriptUsage | undefined): Usage {
  const input = step?.input ?? defaults.input;
  const output = step?.output ?? defaults.output;
  const cacheRead = step?.cacheRead ?? 0;
  const cacheWrite = step?.cacheWrite ?? 0;
  const cost = {
    input: step?.cost?.input ?? 0,
    output: step?.cost?.output ?? 0,
    cacheRead: step?.cost?.cacheRead ?? 0,
    cacheWrite: step?.cost?.cacheWrite ?? 0,
  };
  const usage: Usage = {
    input,
    output,
    cacheRead,
    cacheWrite,
    totalTokens: step?.totalTokens ?? input + output + cacheRead + cacheWrite,
    cost: { ...cost, total: step?.cost?.total ?? cost.input + cost.output + cost.cacheRead + cost.cacheWrite },
  };
  const reasoning = step?.reasoning ?? defaults.reasoning;
  if (reasoning !== undefined) usage.reasoning = reasoning;
  if (step?.cacheWrite1h !== undefined) usage.cacheWrite1h = step.cacheWrite1h;
  return usage;
}

function messageChars(message: Message): number {
  switch (message.role) {
    case "system": {
      const sections = Object.values(message.sections ?? {}).reduce((sum, text) => sum + (text?.length ?? 0), 0);
      const tools = (message.toolsAdded ?? []).reduce(
        (sum, tool) => sum + tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length,
        0,
      );
      return contentChars(message.content) + sections + tools;
    }
    case "user":
      return contentChars(message.content);
    case "assistant":
      return message.content.reduce(
        (sum, block) =>
          sum +
          (block.type === "text"
            ? block.text.length
            : block.type === "thinking"
              ? block.thinking.length
              : block.name.length + JSON.stringify(block.arguments).length),
        0,
      );
    case "toolResult":
      return message.toolName.length + contentChars(message.content);
  }
}

function contentChars(content: string | readonly { type: string; text?: string }[]): number {
  if (typeof content === "string") return content.length;
  return content.reduce((sum, block) => sum + (block.type === "text" ? (block.text?.length ?? 0) : 0), 0);
}
