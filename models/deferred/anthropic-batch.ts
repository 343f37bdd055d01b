import type { Api, Model, ModelCostRates, ProviderHeaders } from "@earendil-works/pi-ai";
import type { DeferredHandle } from "@earendil-works/pi-ai";
import { isRecord } from "../../schema/json.ts";
import { captureRequest } from "./captured-request.ts";
import { failedStream, jsonAnswer, pendingStream, pollAnswer, pollRead, replayTransport, transportOf } from "./deferred-stream.ts";
import { apiUrl, EMPTY_TRANSCRIPT, handleProblem, headersOf, plainOptions, type DeferredApi } from "./provider.ts";

// Anthropic Message Batches (half the price, answered within 24 hours): the request pi-ai would
// stream becomes the one request of a batch (`POST /v1/messages/batches`, `stream` dropped); a
// poll reads the batch and, once it has ended, its JSONL results; a succeeded message is replayed
// through pi-ai's own Messages stream parser as the stream that would have delivered it.

export const ANTHROPIC_POLL_AFTER_MS = 60_000;
/** A batch's results can be fetched for 29 days after it was created. */
const RESULTS_KEPT_MS = 29 * 24 * 60 * 60 * 1000;
const ANTHROPIC_VERSION = "2023-06-01";
const CUSTOM_ID = "request";

export const anthropicBatch: DeferredApi = {
  apis: ["anthropic-messages"],

  async submit(base, model, context, options) {
    const captured = await captureRequest((transport) => base.streamSimple(model, context, { ...plainOptions(options), fetch: transport }));
    const { stream: _stream, ...params } = captured.body;
    const url = new URL(captured.url);
    url.pathname = url.pathname.replace(/\/messages$/, "/messages/batches");
    captured.headers.delete("content-length");
    const batch = await jsonAnswer(
      await transportOf(options.fetch)(url.toString(), {
        method: "POST",
        headers: captured.headers,
        body: JSON.stringify({ requests: [{ custom_id: CUSTOM_ID, params }] }),
        ...(options.signal && { signal: options.signal }),
      }),
      "Creating the message batch",
    );
    const id = batch.id;
    if (typeof id !== "string" || id.length === 0) throw new Error("Creating the message batch: the answer carries no batch id");
    const created = typeof batch.created_at === "string" ? Date.parse(batch.created_at) : Number.NaN;
    const handle: DeferredHandle = {
      provider: model.provider,
      modelId: model.id,
      api: model.api,
      id,
      pollAfterMs: ANTHROPIC_POLL_AFTER_MS,
      ...(Number.isFinite(created) && { expiresAt: created + RESULTS_KEPT_MS }),
    };
    return pendingStream(model, handle);
  },

  async poll(base, model, handle, options) {
    const problem = handleProblem(model, handle);
    if (problem) return failedStream(model, problem);
    const transport = transportOf(options.fetch);
    const init = { headers: authHeaders(options.apiKey, options.headers ?? undefined), ...(options.signal && { signal: options.signal }) };
    const batchUrl = apiUrl(model, `/v1/messages/batches/${encodeURIComponent(handle.id)}`);
    const batch = await pollAnswer(transport, batchUrl, init, `Reading message batch ${handle.id}`);
    if (batch === undefined || batch.processing_status !== "ended") return pendingStream(model, handle);
    // The batch names where its results are; a tenant's own base URL (a proxy) is kept for them.
    const resultsUrl = typeof batch.results_url === "string" && batch.results_url.startsWith(apiUrl(model, "/")) ? batch.results_url : `${batchUrl}/results`;
    // A dropped connection (or a rate limit, a server error) leaves the run suspended: asked again at the next poll.
    const results = await pollRead(transport, resultsUrl, init);
    if (results === undefined) return pendingStream(model, handle);
    if (!results.response.ok) throw new Error(`Reading the results of message batch ${handle.id} failed (HTTP ${results.response.status})`);
    // Read as bytes: the results are served as JSONL, whatever content type the host gives them.
    const result = resultOf(new TextDecoder().decode(results.bytes));
    if (result === undefined) return failedStream(model, `Message batch ${handle.id} ended without a result for its request`);
    switch (result.type) {
      case "succeeded":
        if (!isRecord(result.message)) return failedStream(model, `Message batch ${handle.id} succeeded without a message`);
        // Replayed at the batch's price: pi-ai's parser costs usage at the model's streaming rates.
        return base.streamSimple(batchPriced(model), EMPTY_TRANSCRIPT, { ...plainOptions(options), fetch: replayTransport(replayEvents(result.message)) });
      case "errored":
        return failedStream(model, `Message batch ${handle.id} failed: ${errorText(result.error)}`);
      case "canceled":
        return failedStream(model, `Message batch ${handle.id} was canceled at the provider before its request ran`);
      case "expired":
        return failedStream(model, `Message batch ${handle.id} expired at the provider (24 hours) before its request ran`);
      default:
        return failedStream(model, `Message batch ${handle.id} ended with an unknown result (${String(result.type)})`);
    }
  },

  async cancel(model, handle, options) {
    await transportOf(options.fetch)(apiUrl(model, `/v1/messages/batches/${encodeURIComponent(handle.id)}/cancel`), {
      method: "POST",
      headers: authHeaders(options.apiKey, options.headers ?? undefined),
      ...(options.signal && { signal: options.signal }),
    });
  },
};

/** The model as a message batch bills it: every rate, each tier's too, at half the streaming price. */
function batchPriced(model: Model<Api>): Model<Api> {
  const half = <Rates extends ModelCostRates>(rates: Rates): Rates => ({
    ...rates,
    input: rates.input / 2,
    output: rates.output / 2,
    cacheRead: rates.cacheRead / 2,
    cacheWrite: rates.cacheWrite / 2,
  });
  return { ...model, cost: { ...half(model.cost), ...(model.cost.tiers && { tiers: model.cost.tiers.map(half) }) } };
}

/** The result line of the batch's one request (JSONL: one object per line). */
function resultOf(jsonl: string): Record<string, unknown> | undefined {
  for (const line of jsonl.split("\n")) {
    if (line.trim().length === 0) continue;
    const row: unknown = JSON.parse(line);
    if (isRecord(row) && row.custom_id === CUSTOM_ID && isRecord(row.result)) return row.result;
  }
  return undefined;
}

/** A finished message as the Messages stream that would have delivered it. */
function replayEvents(message: Record<string, unknown>): { event: string; data: unknown }[] {
  const blocks = Array.isArray(message.content) ? message.content.filter(isRecord) : [];
  const usage = isRecord(message.usage) ? message.usage : {};
  return [
    { event: "message_start", data: { type: "message_start", message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 0 } } } },
    ...blocks.flatMap((block, index) => blockEvents(block, index)),
    { event: "message_delta", data: { type: "message_delta", delta: { stop_reason: message.stop_reason ?? null, stop_sequence: message.stop_sequence ?? null }, usage } },
    { event: "message_stop", data: { type: "message_stop" } },
  ];
}

function blockEvents(block: Record<string, unknown>, index: number): { event: string; data: unknown }[] {
  const start = (content_block: unknown) => ({ event: "content_block_start", data: { type: "content_block_start", index, content_block } });
  const delta = (value: unknown) => ({ event: "content_block_delta", data: { type: "content_block_delta", index, delta: value } });
  const stop = { event: "content_block_stop", data: { type: "content_block_stop", index } };
  switch (block.type) {
    case "text":
      return [start({ ...block, text: "" }), delta({ type: "text_delta", text: block.text }), stop];
    case "thinking":
      return [
        start({ type: "thinking", thinking: "", signature: "" }),
        delta({ type: "thinking_delta", thinking: block.thinking }),
        delta({ type: "signature_delta", signature: block.signature }),
        stop,
      ];
    case "tool_use":
      return [start({ ...block, input: {} }), delta({ type: "input_json_delta", partial_json: JSON.stringify(block.input ?? {}) }), stop];
    default:
      return [start(block), stop];
  }
}

function errorText(error: unknown): string {
  const inner = isRecord(error) && isRecord(error.error) ? error.error : error;
  if (isRecord(inner) && typeof inner.message === "string") return `${typeof inner.type === "string" ? `${inner.type}: ` : ""}${inner.message}`;
  return "no error detail";
}

function authHeaders(apiKey: string | undefined, extra: ProviderHeaders | undefined): Headers {
  const headers = headersOf(extra);
  if (apiKey !== undefined) headers.set("x-api-key", apiKey);
  headers.set("anthropic-version", ANTHROPIC_VERSION);
  return headers;
}
