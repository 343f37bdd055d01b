import type {
  Api,
  AssistantMessageEventStream,
  Context,
  DeferredHandle,
  Model,
  SimpleStreamOptions,
} from "@earendil-works/pi-ai";

/**
 * The Models port (ARCHITECTURE D9): the subset of pi-ai's `Models` registry the engine uses.
 * `streamSimple` is lazy (auth and provider loading happen inside the returned stream), so the
 * whole call belongs to one gated admission.
 */
export interface ModelsPort {
  getModel(provider: string, modelId: string): Model<Api> | undefined;
  streamSimple(model: Model<Api>, context: Context, options?: SimpleStreamOptions): AssistantMessageEventStream;
  streamDeferred(model: Model<Api>, handle: DeferredHandle, options?: { signal?: AbortSignal; wait?: number }): AssistantMessageEventStream;
  cancelDeferred(model: Model<Api>, handle: DeferredHandle, options?: { signal?: AbortSignal }): Promise<void>;
}

export type ProviderModel = Model<Api>;
