import type {
  Api,
  AssistantMessageEventStream,
  DeferredCancelOptions,
  DeferredFetchOptions,
  DeferredHandle,
  Model,
  SimpleStreamOptions,
  TranscriptContext,
} from "@earendil-works/pi-ai";
import type { ProviderHeaders } from "@earendil-works/pi-ai";
import { createProvider, type Provider } from "@earendil-works/pi-ai/models";
import { normalizeContext } from "@earendil-works/pi-ai/utils/transcript";
import { deferredStream, failedStream } from "./deferred-stream.ts";

// Deferred responses for hosted providers pi-ai streams but does not yet defer (its
// `fetchDeferred`/`cancelDeferred` extension points, reference §3.11): the provider is rebuilt with
// `createProvider` from its own catalog, auth and streams, plus a deferred implementation. A
// request asks for it with the stream option `deferred`; every other request streams as before.

/** How one provider family submits, polls and cancels a deferred request. */
export interface DeferredApi {
  /** The model APIs it serves (a model of another API cannot defer). */
  apis: readonly string[];
  submit(base: Provider, model: Model<Api>, context: TranscriptContext, options: SimpleStreamOptions): Promise<AssistantMessageEventStream>;
  poll(base: Provider, model: Model<Api>, handle: DeferredHandle, options: DeferredFetchOptions): Promise<AssistantMessageEventStream>;
  cancel(model: Model<Api>, handle: DeferredHandle, options: DeferredCancelOptions): Promise<void>;
}

export function withDeferredResponses(base: Provider, deferred: DeferredApi): Provider {
  const serves = (model: Model<Api>) => deferred.apis.includes(model.api);
  return createProvider({
    id: base.id,
    name: base.name,
    ...(base.baseUrl !== undefined && { baseUrl: base.baseUrl }),
    ...(base.headers !== undefined && { headers: base.headers }),
    auth: base.auth,
    models: base.getModels(),
    api: {
      stream: (model, context, options) => base.stream(model, context, options),
      streamSimple: (model, context, options) => {
        if (!options?.deferred) return base.streamSimple(model, context, options);
        if (!serves(model)) return failedStream(model, `${base.id}/${model.id} (${model.api}) cannot answer deferred`);
        return deferredStream(model, () => deferred.submit(base, model, context, options));
      },
      fetchDeferred: (model, handle, options = {}) => {
        if (!serves(model)) return failedStream(model, `${base.id}/${model.id} (${model.api}) has no deferred responses`);
        return deferredStream(model, () => deferred.poll(base, model, handle, options));
      },
      cancelDeferred: (model, handle, options = {}) => deferred.cancel(model, handle, options),
    },
  });
}

/** The options of a submission's capture or an answer's replay: never deferred, never retried in process. */
export function plainOptions(options: SimpleStreamOptions | DeferredFetchOptions): SimpleStreamOptions {
  const plain: SimpleStreamOptions = { ...options };
  delete plain.deferred;
  return { ...plain, maxRetries: 0 };
}

/** The handle's own fields checked against the model that polls it. */
export function handleProblem(model: Model<Api>, handle: DeferredHandle): string | undefined {
  if (handle.provider === model.provider && handle.modelId === model.id && handle.api === model.api && handle.id.length > 0) return undefined;
  return `The deferred handle ${handle.id} belongs to ${handle.provider}/${handle.modelId} (${handle.api}), not ${model.provider}/${model.id}`;
}

/** A replayed answer needs no context: its transport ignores the request pi-ai builds. */
export const EMPTY_TRANSCRIPT: TranscriptContext = normalizeContext({ messages: [] });

/** Request headers without the entries a caller removed (`null`). */
export function headersOf(extra: ProviderHeaders | undefined): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(extra ?? {})) if (typeof value === "string") headers.set(name, value);
  return headers;
}

/**
 * `path` (starting with `/`) on the model's API. A tenant's base URL may end in `/`, which the
 * SDKs drop when they join their own paths: a poll or a cancel must reach the same API as the
 * submission did, not a `//` path a proxy does not serve.
 */
export function apiUrl(model: Pick<Model<Api>, "baseUrl">, path: string): string {
  return `${model.baseUrl.replace(/\/+$/, "")}${path}`;
}
