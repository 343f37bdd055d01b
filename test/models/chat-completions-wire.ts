import { sse } from "./wire.ts";

// OpenAI Chat Completions streaming (`stream: true`, `stream_options.include_usage`): chunks of
// `chat.completion.chunk` with `choices[0].delta`, a final chunk with `finish_reason`, then a usage
// chunk with empty choices, then `[DONE]`. OpenAI-compatible hosts (Groq, DeepSeek, OpenRouter, …)
// and Workers AI speak the same format; `reasoning_content` carries thinking on those that think.

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  data: { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "fixture", choices: [{ index: 0, delta, finish_reason: finish }] },
});

const usage = (prompt: number, completion: number) => ({
  data: { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "fixture", choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } },
});

/** A streamed text answer, word by word, with thinking first when given. */
export function completionText(words: string[], options: { thinking?: string; usage?: [number, number] } = {}): string[] {
  const [prompt, completion] = options.usage ?? [12, words.length];
  return sse(
    chunk({ role: "assistant", content: "" }),
    ...(options.thinking ? [chunk({ reasoning_content: options.thinking })] : []),
    ...words.map((word, index) => chunk({ content: index === 0 ? word : ` ${word}` })),
    chunk({}, "stop"),
    usage(prompt, completion),
    { data: "[DONE]" },
  );
}

/** A tool call whose arguments arrive in pieces. */
export function completionToolCall(name: string, argumentPieces: string[]): string[] {
  return sse(
    chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name, arguments: "" } }] }),
    ...argumentPieces.map((piece) => chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
    chunk({}, "tool_calls"),
    usage(20, 9),
    { data: "[DONE]" },
  );
}
