import type { WireAnswer } from "./wire.ts";

// Provider answers for deferred requests, written from each API's documented JSON: OpenAI
// background responses (`POST /responses` with `background: true`, `GET /responses/{id}`) and
// Anthropic Message Batches (`POST /v1/messages/batches`, `GET …/{id}`, JSONL results).

const json = (body: unknown, status = 200): WireAnswer => ({ status, headers: { "content-type": "application/json" }, chunks: [JSON.stringify(body)] });

export const OPENAI_RESPONSE_ID = "resp_bg_1";

export const openaiWire = {
  created: () => json({ id: OPENAI_RESPONSE_ID, object: "response", status: "queued", background: true, output: [] }),
  status: (status: "queued" | "in_progress") => json({ id: OPENAI_RESPONSE_ID, object: "response", status, background: true, output: [] }),
  completed: (text: string, usage = { input: 40, output: 7 }) =>
    json({
      id: OPENAI_RESPONSE_ID,
      object: "response",
      status: "completed",
      background: true,
      output: [
        { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "thinking it over" }] },
        { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] },
      ],
      usage: { input_tokens: usage.input, output_tokens: usage.output, total_tokens: usage.input + usage.output, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    }),
  toolCall: (name: string, args: Record<string, unknown>) =>
    json({
      id: OPENAI_RESPONSE_ID,
      object: "response",
      status: "completed",
      output: [{ type: "function_call", id: "fc_1", call_id: "call_1", name, arguments: JSON.stringify(args), status: "completed" }],
      usage: { input_tokens: 30, output_tokens: 5, total_tokens: 35, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    }),
  failed: () => json({ id: OPENAI_RESPONSE_ID, object: "response", status: "failed", output: [], error: { code: "server_error", message: "The model failed to answer" } }),
  cancelled: () => json({ id: OPENAI_RESPONSE_ID, object: "response", status: "cancelled", output: [] }),
  notFound: () => json({ error: { type: "invalid_request_error", message: `Response with id '${OPENAI_RESPONSE_ID}' not found.` } }, 404),
  cancelAnswer: () => json({ id: OPENAI_RESPONSE_ID, object: "response", status: "cancelled", output: [] }),
};

export const ANTHROPIC_BATCH_ID = "msgbatch_01fixture";
const RESULTS_URL = `https://api.anthropic.com/v1/messages/batches/${ANTHROPIC_BATCH_ID}/results`;

const batch = (processing_status: "in_progress" | "canceling" | "ended") =>
  json({
    id: ANTHROPIC_BATCH_ID,
    type: "message_batch",
    processing_status,
    request_counts: { processing: processing_status === "ended" ? 0 : 1, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
    created_at: "2026-12-01T10:00:00Z",
    expires_at: "2026-12-02T10:00:00Z",
    results_url: processing_status === "ended" ? RESULTS_URL : null,
  });

const resultLine = (result: unknown): WireAnswer => ({ headers: { "content-type": "application/x-jsonl" }, chunks: [`${JSON.stringify({ custom_id: "request", result })}\n`] });

export const anthropicWire = {
  created: () => batch("in_progress"),
  status: (status: "in_progress" | "canceling" | "ended") => batch(status),
  succeeded: (text: string, usage = { input: 50, output: 9 }) =>
    resultLine({
      type: "succeeded",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [
          { type: "thinking", thinking: "weighing it", signature: "c2lnbmF0dXJl" },
          { type: "text", text },
        ],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: usage.input, output_tokens: usage.output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
      },
    }),
  toolUse: (name: string, input: Record<string, unknown>) =>
    resultLine({
      type: "succeeded",
      message: {
        id: "msg_2",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [{ type: "tool_use", id: "toolu_1", name, input }],
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 20, output_tokens: 4 },
      },
    }),
  errored: () => resultLine({ type: "errored", error: { type: "error", error: { type: "invalid_request_error", message: "max_tokens is too large" } } }),
  canceled: () => resultLine({ type: "canceled" }),
  expired: () => resultLine({ type: "expired" }),
  cancelAnswer: () => batch("canceling"),
};
