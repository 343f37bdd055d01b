import type {
  Api,
  AssistantMessage,
  AssistantMessageEventStream,
  DeferredHandle,
  JsonObject,
  Model,
  ToolCall,
} from "@earendil-works/pi-ai";
import type { ScriptUsage } from "./steps.ts";
import { estimateOutputTokens, mergeUsage } from "./usage.ts";

// Plays one planned response onto a pi-ai event stream, following the protocol of every other
// provider: `start`, then per block `*_start`, `*_delta`…, `*_end`, then `done{reason}` or
// `error{reason}`. An abort (the request's signal) before `start` ends the stream with a bare
// `error{aborted}`; after `start` it ends it with the partial content produced so far.

/** Time as the scripted provider sees it; injectable so tests and local tools can steer it. */
export interface ScriptedClock {
  now(): number;
  /** Resolves after `ms`, or as soon as `signal` aborts. Never rejects. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: ScriptedClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
    }),
};

export type PlannedBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string }
  | { type: "toolCall"; id: string; name: string; arguments: JsonObject };

/** Everything a response will be, decided before the first event. */
export interface ResponsePlan {
  blocks: PlannedBlock[];
  stopReason: "stop" | "length" | "toolUse" | "deferred" | "error";
  errorMessage?: string;
  deferred?: DeferredHandle;
  /** Input tokens of the request (the default usage.input). */
  inputTokens: number;
  /** Replaces the estimated output tokens (a genuine length stop reports the output limit). */
  outputTokens?: number;
  /** The step's usage numbers, merged over the defaults. */
  usage?: ScriptUsage;
  delayMs?: number;
  chunkMs?: number;
}

export interface PlaybackTarget {
  model: Model<Api>;
  clock: ScriptedClock;
  signal?: AbortSignal;
}

export const ABORTED_MESSAGE = "Request was aborted";

export async function playResponse(
  stream: AssistantMessageEventStream,
  target: PlaybackTarget,
  plan: ResponsePlan,
): Promise<void> {
  const { model, clock, signal } = target;
  const partial: AssistantMessage = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: mergeUsage({ input: 0, output: 0 }, undefined),
    stopReason: "pending",
    timestamp: clock.now(),
  };
  const aborted = (): void => {
    const message: AssistantMessage = {
      ...snapshot(partial),
      usage: mergeUsage({ input: plan.inputTokens, ...estimateOutputTokens(partial.content) }, undefined),
      stopReason: "aborted",
      errorMessage: ABORTED_MESSAGE,
    };
    stream.push({ type: "error", reason: "aborted", error: message });
    stream.end(message);
  };

  if (plan.delayMs) await clock.sleep(plan.delayMs, signal);
  if (signal?.aborted) return aborted();
  stream.push({ type: "start", partial });

  let first = true;
  /** Waits between chunks (never before the first); false when the request was aborted meanwhile. */
  const pace = async (): Promise<boolean> => {
    if (!first && plan.chunkMs) await clock.sleep(plan.chunkMs, signal);
    first = false;
    return !signal?.aborted;
  };

  for (const block of plan.blocks) {
    const contentIndex = partial.content.length;
    if (block.type === "text") {
      const live = { type: "text" as const, text: "" };
      partial.content.push(live);
      stream.push({ type: "text_start", contentIndex, partial });
      for (const delta of textChunks(block.text, plan.chunkMs)) {
        if (!(await pace())) return aborted();
        live.text += delta;
        stream.push({ type: "text_delta", contentIndex, delta, partial });
      }
      stream.push({ type: "text_end", contentIndex, content: block.text, partial });
    } else if (block.type === "thinking") {
      const live = { type: "thinking" as const, thinking: "" };
      partial.content.push(live);
      stream.push({ type: "thinking_start", contentIndex, partial });
      for (const delta of textChunks(block.thinking, plan.chunkMs)) {
        if (!(await pace())) return aborted();
        live.thinking += delta;
        stream.push({ type: "thinking_delta", contentIndex, delta, partial });
      }
      stream.push({ type: "thinking_end", contentIndex, content: block.thinking, partial });
    } else {
      const live: ToolCall = { type: "toolCall", id: block.id, name: block.name, arguments: {} };
      partial.content.push(live);
      stream.push({ type: "toolcall_start", contentIndex, partial });
      for (const delta of jsonChunks(JSON.stringify(block.arguments), plan.chunkMs)) {
        if (!(await pace())) return aborted();
        stream.push({ type: "toolcall_delta", contentIndex, delta, partial });
      }
      live.arguments = block.arguments;
      stream.push({ type: "toolcall_end", contentIndex, toolCall: { ...live }, partial });
    }
  }
  if (signal?.aborted) return aborted();

  const estimate = estimateOutputTokens(partial.content);
  const message: AssistantMessage = {
    ...snapshot(partial),
    usage: mergeUsage(
      {
        input: plan.inputTokens,
        output: plan.outputTokens ?? estimate.output,
        ...(estimate.reasoning > 0 && { reasoning: estimate.reasoning }),
      },
      plan.usage,
    ),
    stopReason: plan.stopReason,
    ...(plan.errorMessage !== undefined && { errorMessage: plan.errorMessage }),
    ...(plan.deferred !== undefined && { deferred: plan.deferred }),
  };
  if (plan.stopReason === "error") stream.push({ type: "error", reason: "error", error: message });
  else stream.push({ type: "done", reason: plan.stopReason, message });
  stream.end(message);
}

/** A settled copy of the live partial: its own content array and blocks. */
function snapshot(partial: AssistantMessage): AssistantMessage {
  return { ...partial, content: partial.content.map((block) => ({ ...block })) };
}

/** Unchunked: the whole text as one delta. Chunked: one delta per word (with its surrounding spaces). */
export function textChunks(text: string, chunkMs: number | undefined): string[] {
  if (text.length === 0) return [];
  if (chunkMs === undefined) return [text];
  return text.match(/\s*\S+\s*/g) ?? [text];
}

const JSON_CHUNK = 16;

function jsonChunks(json: string, chunkMs: number | undefined): string[] {
  if (chunkMs === undefined) return [json];
  const chunks: string[] = [];
  for (let at = 0; at < json.length; at += JSON_CHUNK) chunks.push(json.slice(at, at + JSON_CHUNK));
  return chunks;
}
