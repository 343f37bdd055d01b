import { sse } from "./wire.ts";

// Streams in each provider family's documented wire format (OpenAI Responses, Anthropic Messages,
// Google Gemini `streamGenerateContent?alt=sse`): thinking, then text word by word, then usage.

export function responsesStream(thinking: string, words: string[], usage: { input: number; output: number }): string[] {
  const text = words.join(" ");
  return sse(
    { event: "response.created", data: { type: "response.created", response: { id: "resp_1", object: "response", status: "in_progress", output: [] } } },
    { event: "response.output_item.added", data: { type: "response.output_item.added", output_index: 0, item: { type: "reasoning", id: "rs_1", summary: [] } } },
    { event: "response.reasoning_summary_text.delta", data: { type: "response.reasoning_summary_text.delta", output_index: 0, item_id: "rs_1", summary_index: 0, delta: thinking } },
    { event: "response.output_item.done", data: { type: "response.output_item.done", output_index: 0, item: { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: thinking }] } } },
    { event: "response.output_item.added", data: { type: "response.output_item.added", output_index: 1, item: { type: "message", id: "msg_1", role: "assistant", status: "in_progress", content: [] } } },
    ...words.map((word, index) => ({
      event: "response.output_text.delta",
      data: { type: "response.output_text.delta", output_index: 1, item_id: "msg_1", content_index: 0, delta: index === 0 ? word : ` ${word}` },
    })),
    {
      event: "response.output_item.done",
      data: { type: "response.output_item.done", output_index: 1, item: { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] } },
    },
    {
      event: "response.completed",
      data: {
        type: "response.completed",
        response: {
          id: "resp_1",
          object: "response",
          status: "completed",
          usage: { input_tokens: usage.input, output_tokens: usage.output, total_tokens: usage.input + usage.output, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
        },
      },
    },
  );
}

export function anthropicStream(thinking: string, words: string[], usage: { input: number; output: number }): string[] {
  return sse(
    { event: "message_start", data: { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "fixture", content: [], stop_reason: null, usage: { input_tokens: usage.input, output_tokens: 1 } } } },
    { event: "content_block_start", data: { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } } },
    { event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking } } },
    { event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "c2lnbmF0dXJl" } } },
    { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
    { event: "content_block_start", data: { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } } },
    ...words.map((word, index) => ({ event: "content_block_delta", data: { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: index === 0 ? word : ` ${word}` } } })),
    { event: "content_block_stop", data: { type: "content_block_stop", index: 1 } },
    { event: "message_delta", data: { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: usage.output } } },
    { event: "message_stop", data: { type: "message_stop" } },
  );
}

export function geminiStream(thinking: string, words: string[], usage: { input: number; output: number }): string[] {
  const candidate = (parts: unknown[], finishReason?: string) => ({ content: { role: "model", parts }, index: 0, ...(finishReason && { finishReason }) });
  return sse(
    { data: { candidates: [candidate([{ text: thinking, thought: true }])], modelVersion: "fixture" } },
    ...words.map((word, index) => ({ data: { candidates: [candidate([{ text: index === 0 ? word : ` ${word}` }])], modelVersion: "fixture" } })),
    {
      data: {
        candidates: [candidate([{ text: "" }], "STOP")],
        usageMetadata: { promptTokenCount: usage.input, candidatesTokenCount: usage.output, totalTokenCount: usage.input + usage.output },
        modelVersion: "fixture",
      },
    },
  );
}
