import type {
  Api,
  AssistantMessage,
  AssistantMessageEventStream,
  DeferredFetchOptions,
  DeferredHandle,
  Model,
  ProviderStreams,
  SimpleStreamOptions,
  TranscriptContext,
} from "@earendil-works/pi-ai";
import { createProvider, type Provider } from "@earendil-works/pi-ai/models";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai/utils/event-stream";
import { playResponse, systemClock, type PlaybackTarget, type ResponsePlan, type ScriptedClock } from "./playback.ts";
import {
  countToolCalls,
  echoPlan,
  errorPlan,
  EXHAUSTED_MESSAGE,
  NO_SOURCE_MESSAGE,
  planStep,
  readDeferredHandle,
} from "./respond.ts";
import type { ScriptSource } from "./script-source.ts";
import { estimateInputTokens, mergeUsage } from "./usage.ts";

// The `scripted` provider (API.md, ARCHITECTURE D9): a real pi-ai provider built with
// `createProvider`, deterministic and offline. `scripted/echo` answers with the last user text;
// `scripted/script` plays the next step of the session's durable script, one step per request.

export const SCRIPTED_PROVIDER = "scripted";
export const SCRIPTED_API = "scripted";

export interface ScriptedProviderOptions {
  /** The step source of the current request (the session's); undefined when none is bound. */
  source?: () => ScriptSource | undefined;
  clock?: ScriptedClock;
}

const base = {
  api: SCRIPTED_API,
  provider: SCRIPTED_PROVIDER,
  baseUrl: "scripted://local",
  input: ["text", "image"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128_000,
  maxTokens: 8_192,
} satisfies Partial<Model<typeof SCRIPTED_API>>;

export const scriptedModels: readonly Model<typeof SCRIPTED_API>[] = [
  { ...base, id: "echo", name: "Scripted echo", reasoning: false },
  { ...base, id: "script", name: "Scripted script", reasoning: true },
];

export function createScriptedProvider(options: ScriptedProviderOptions = {}): Provider<typeof SCRIPTED_API> {
  const clock = options.clock ?? systemClock;

  /** Starts the response asynchronously; any unexpected failure still settles the stream. */
  const run = (target: PlaybackTarget, plan: () => Promise<ResponsePlan>): AssistantMessageEventStream => {
    const stream = createAssistantMessageEventStream();
    void (async () => {
      let planned: ResponsePlan;
      try {
        planned = await plan();
      } catch (error) {
        planned = errorPlan(`scripted: the request failed: ${describe(error)}`, 0);
      }
      try {
        await playResponse(stream, target, planned);
      } catch (error) {
        failStream(stream, target.model, `scripted: the response failed: ${describe(error)}`);
      }
    })();
    return stream;
  };

  const streamSimple = (
    model: Model<Api>,
    context: TranscriptContext,
    streamOptions?: SimpleStreamOptions,
  ): AssistantMessageEventStream => {
    const target = targetOf(model, clock, streamOptions?.signal);
    return run(target, async () => {
      const inputTokens = estimateInputTokens(context);
      if (model.id === "echo") return echoPlan(context, inputTokens, streamOptions?.maxTokens ?? model.maxTokens);
      if (model.id !== "script") return errorPlan(`scripted: unknown model ${model.id}`, inputTokens);
      // Not admitted: leave the script untouched; playback ends the stream as aborted.
      if (streamOptions?.signal?.aborted) return errorPlan("scripted: aborted", inputTokens);
      const source = options.source?.();
      if (!source) return errorPlan(NO_SOURCE_MESSAGE, inputTokens);
      const step = await source.takeStep();
      if (!step) return errorPlan(EXHAUSTED_MESSAGE, inputTokens);
      const maxTokens = Math.max(model.maxTokens, streamOptions?.maxTokens ?? 0);
      return planStep(step, { model, inputTokens, toolCallsBefore: countToolCalls(context), maxTokens, now: clock.now() });
    });
  };

  const fetchDeferred = (
    model: Model<Api>,
    handle: DeferredHandle,
    fetchOptions?: DeferredFetchOptions,
  ): AssistantMessageEventStream =>
    run(targetOf(model, clock, fetchOptions?.signal), async () => {
      const read = readDeferredHandle(model, handle);
      if (typeof read === "string") return errorPlan(read, 0);
      return planStep(read.step, {
        model,
        inputTokens: read.inputTokens,
        toolCallsBefore: read.toolCallsBefore,
        maxTokens: model.maxTokens,
      });
    });

  const api: ProviderStreams = {
    stream: streamSimple,
    streamSimple,
    fetchDeferred,
    // Nothing runs in the background: a scripted deferred response is ready whenever it is polled.
    cancelDeferred: async () => {},
  };

  return createProvider<typeof SCRIPTED_API>({
    id: SCRIPTED_PROVIDER,
    name: "Scripted (deterministic, offline)",
    baseUrl: base.baseUrl,
    auth: { apiKey: { name: "Scripted (keyless)", resolve: async () => ({ auth: {}, source: "keyless" }) } },
    models: scriptedModels,
    api,
  });
}

function targetOf(model: Model<Api>, clock: ScriptedClock, signal: AbortSignal | undefined): PlaybackTarget {
  return { model, clock, ...(signal !== undefined && { signal }) };
}

/** Ends a stream whose playback broke; a no-op when it already ended. */
function failStream(stream: AssistantMessageEventStream, model: Model<Api>, errorMessage: string): void {
  const message: AssistantMessage = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: mergeUsage({ input: 0, output: 0 }, undefined),
    stopReason: "error",
    errorMessage,
    timestamp: Date.now(),
  };
  stream.push({ type: "error", reason: "error", error: message });
  stream.end(message);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
