import type { Api, AssistantMessage, AssistantMessageEventStream, DeferredHandle, FetchFunction, Model, StopReason } from "@earendil-works/pi-ai";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai/utils/event-stream";
import { ProviderRequestRefused } from "../../harness/execution/provider-refusal.ts";

// The answers a deferred submission or poll gives without a model reply to parse: "still
// pending" (a `deferred` stop with the handle, which the engine keeps suspended) and a failure.

/** A reply with no content and no usage, as the stop `stopReason` of `model` (also used for failures). */
export function emptyMessage(model: Model<Api>, stopReason: StopReason): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason,
    timestamp: Date.now(),
  };
}

/** A response that is not ready yet: the engine suspends the run on this handle. */
export function pendingStream(model: Model<Api>, handle: DeferredHandle): AssistantMessageEventStream {
  const stream = createAssistantMessageEventStream();
  const message: AssistantMessage = { ...emptyMessage(model, "deferred"), deferred: handle };
  stream.push({ type: "start", partial: message });
  stream.push({ type: "done", reason: "deferred", message });
  return stream;
}

/** A failed submission or poll (`aborted` when the provider reports the work cancelled). */
export function failedStream(model: Model<Api>, errorMessage: string, reason: "error" | "aborted" = "error"): AssistantMessageEventStream {
  const stream = createAssistantMessageEventStream();
  const message: AssistantMessage = { ...emptyMessage(model, reason), errorMessage };
  stream.push({ type: "error", reason, error: message });
  return stream;
}

/**
 * Runs `body` and answers its stream; anything it throws (a network failure, an unreadable
 * answer) becomes a failed stream instead of an exception the engine would have to classify.
 */
export function deferredStream(model: Model<Api>, body: () => Promise<AssistantMessageEventStream>): AssistantMessageEventStream {
  const out = createAssistantMessageEventStream();
  void (async () => {
    let inner: AssistantMessageEventStream;
    try {
      inner = await body();
    } catch (error) {
      inner = failedStream(model, error instanceof Error ? error.message : String(error));
    }
    for await (const event of inner) out.push(event);
  })();
  return out;
}

/** The request's transport (a test's wire fixture, the tenant's observed transport), else the platform's fetch. */
export function transportOf(fetchFunction: FetchFunction | undefined): FetchFunction {
  return fetchFunction ?? ((input, init) => fetch(input, init));
}

/** A transport that answers any request with this SSE body (a stored answer replayed as a stream). */
export function replayTransport(events: readonly { event: string; data: unknown }[]): FetchFunction {
  const text = events.map(({ event, data }) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join("");
  return async () => new Response(text, { status: 200, headers: { "content-type": "text/event-stream" } });
}

/**
 * A poll's read (a status check only reads): a rate limit, a server error or a dropped connection
 * says nothing about the work, so the answer is "not known yet" (`undefined`: still pending, the
 * next permit polls again) rather than a failure that would end a run whose answer may be ready
 * a minute later. Any other refusal is an Error naming its status and message, and so is a poll
 * the service itself refused to send or to follow (ARCHITECTURE D17): polling again cannot help.
 */
export async function pollAnswer(fetchFunction: FetchFunction, url: string, init: RequestInit, what: string): Promise<Record<string, unknown> | undefined> {
  const read = await pollRead(fetchFunction, url, init);
  return read === undefined ? undefined : answerOf(read.response, new TextDecoder().decode(read.bytes), what);
}

/**
 * A poll's response and its whole body, or `undefined` ("not known yet", as in `pollAnswer`) when
 * the request or the reading of its body fails on the way (a dropped connection), or the provider
 * answers a rate limit or a server error. The caller judges any other status.
 */
export async function pollRead(fetchFunction: FetchFunction, url: string, init: RequestInit): Promise<{ response: Response; bytes: ArrayBuffer } | undefined> {
  let response: Response;
  try {
    response = await fetchFunction(url, init);
  } catch (error) {
    if (init.signal?.aborted || error instanceof ProviderRequestRefused) throw error;
    return undefined;
  }
  if (response.status === 429 || response.status >= 500) {
    await response.body?.cancel();
    return undefined;
  }
  try {
    return { response, bytes: await response.arrayBuffer() };
  } catch (error) {
    if (init.signal?.aborted) throw error;
    return undefined;
  }
}

/** The provider's JSON answer, or an Error naming its status and message. */
export async function jsonAnswer(response: Response, what: string): Promise<Record<string, unknown>> {
  return answerOf(response, await response.text(), what);
}

function answerOf(response: Response, text: string, what: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = text.length > 0 ? JSON.parse(text) : {};
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const message = errorText(body) ?? text.slice(0, 200);
    throw new Error(`${what} failed (HTTP ${response.status}): ${message}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new Error(`${what}: the provider's answer is not a JSON object`);
  return Object.fromEntries(Object.entries(body));
}

function errorText(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const error = Reflect.get(body, "error");
  if (typeof error === "object" && error !== null) {
    const message = Reflect.get(error, "message");
    if (typeof message === "string") return message;
  }
  return undefined;
}
