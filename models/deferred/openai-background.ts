import type { ProviderHeaders } from "@earendil-works/pi-ai";
import type { DeferredHandle } from "@earendil-works/pi-ai";
import { isRecord } from "../../schema/json.ts";
import { captureRequest } from "./captured-request.ts";
import { failedStream, jsonAnswer, pendingStream, pollAnswer, replayTransport, transportOf } from "./deferred-stream.ts";
import { apiUrl, EMPTY_TRANSCRIPT, handleProblem, headersOf, plainOptions, type DeferredApi } from "./provider.ts";

// OpenAI background responses (Responses API `background: true`): the request pi-ai would stream
// is submitted with `background: true, stream: false, store: true`; a poll reads
// `GET /responses/{id}`; a finished response is replayed through pi-ai's own Responses stream
// parser (one `output_item.done` per output item, then `response.completed`), so content,
// reasoning signatures, tool calls, usage and cost come out exactly as a streamed answer's would.

/** How soon a background response is worth polling; the cron looks once a minute anyway. */
export const OPENAI_POLL_AFTER_MS = 10_000;

const PENDING = new Set(["queued", "in_progress"]);

export const openaiBackground: DeferredApi = {
  apis: ["openai-responses"],

  async submit(base, model, context, options) {
    const captured = await captureRequest((transport) => base.streamSimple(model, context, { ...plainOptions(options), fetch: transport }));
    const body = { ...captured.body, background: true, stream: false, store: true };
    captured.headers.delete("content-length");
    const answer = await jsonAnswer(
      await transportOf(options.fetch)(captured.url, { method: "POST", headers: captured.headers, body: JSON.stringify(body), ...(options.signal && { signal: options.signal }) }),
      "Creating the background response",
    );
    const id = answer.id;
    if (typeof id !== "string" || id.length === 0) throw new Error("Creating the background response: the answer carries no response id");
    if (answer.status === "failed") return failedStream(model, failureText(answer));
    const handle: DeferredHandle = { provider: model.provider, modelId: model.id, api: model.api, id, pollAfterMs: OPENAI_POLL_AFTER_MS };
    return pendingStream(model, handle);
  },

  async poll(base, model, handle, options) {
    const problem = handleProblem(model, handle);
    if (problem) return failedStream(model, problem);
    const response = await pollAnswer(
      transportOf(options.fetch),
      apiUrl(model, `/responses/${encodeURIComponent(handle.id)}`),
      { headers: authHeaders(options.apiKey, options.headers ?? undefined), ...(options.signal && { signal: options.signal }) },
      `Reading background response ${handle.id}`,
    );
    if (response === undefined) return pendingStream(model, handle);
    const status = response.status;
    if (typeof status === "string" && PENDING.has(status)) return pendingStream(model, handle);
    if (status === "completed" || status === "incomplete") {
      return base.streamSimple(model, EMPTY_TRANSCRIPT, { ...plainOptions(options), fetch: replayTransport(replayEvents(response)) });
    }
    if (status === "cancelled") return failedStream(model, `The background response ${handle.id} was cancelled at the provider`);
    return failedStream(model, failureText(response));
  },

  async cancel(model, handle, options) {
    await transportOf(options.fetch)(apiUrl(model, `/responses/${encodeURIComponent(handle.id)}/cancel`), {
      method: "POST",
      headers: authHeaders(options.apiKey, options.headers ?? undefined),
      ...(options.signal && { signal: options.signal }),
    });
  },
};

/** A stored response as the stream that would have delivered it. */
function replayEvents(response: Record<string, unknown>): { event: string; data: unknown }[] {
  const output = Array.isArray(response.output) ? response.output : [];
  const last = response.status === "incomplete" ? "response.incomplete" : "response.completed";
  return [
    { event: "response.created", data: { type: "response.created", response: { ...response, status: "in_progress", output: [] } } },
    ...output.map((item, index) => ({ event: "response.output_item.done", data: { type: "response.output_item.done", output_index: index, item } })),
    { event: last, data: { type: last, response } },
  ];
}

function failureText(response: Record<string, unknown>): string {
  const error = response.error;
  if (isRecord(error) && typeof error.message === "string") return `${typeof error.code === "string" ? `${error.code}: ` : ""}${error.message}`;
  return `The background response ended ${typeof response.status === "string" ? response.status : "without a status"}`;
}

function authHeaders(apiKey: string | undefined, extra: ProviderHeaders | undefined): Headers {
  const headers = headersOf(extra);
  if (apiKey !== undefined) headers.set("authorization", `Bearer ${apiKey}`);
  return headers;
}

