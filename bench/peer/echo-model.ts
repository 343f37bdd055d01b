import type { LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { simulateReadableStream, type ModelMessage } from "ai";
import { MockLanguageModelV4 } from "ai/test";

/**
 * The peer's model: the same answer as our `scripted/echo` (the last user message's text, in one
 * text delta, at once, with no delay), through the AI SDK's own mock model and stream helper, so
 * the SDK's streaming and persistence run exactly as with a real provider.
 */
export function echoModel(messages: readonly ModelMessage[]): MockLanguageModelV4 {
  const text = lastUserText(messages);
  const chunks: LanguageModelV4StreamPart[] = [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "text-1" },
    { type: "text-delta", id: "text-1", delta: text },
    { type: "text-end", id: "text-1" },
    {
      type: "finish",
      finishReason: { unified: "stop", raw: "stop" },
      usage: {
        inputTokens: { total: Math.ceil(text.length / 4), noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: Math.ceil(text.length / 4), text: undefined, reasoning: undefined },
      },
    },
  ];
  return new MockLanguageModelV4({ doStream: async () => ({ stream: simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: null }) }) });
}

function lastUserText(messages: readonly ModelMessage[]): string {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role !== "user") continue;
    if (typeof message.content === "string") return message.content;
    return message.content.map((part) => (part.type === "text" ? part.text : "")).join("");
  }
  return "";
}
