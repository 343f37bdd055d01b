import type { Api, AssistantMessage, DeferredHandle, Model, TranscriptContext } from "@earendil-works/pi-ai";
import { isRetryableAssistantError } from "@earendil-works/pi-ai/utils/retry";
import { uuidv7 } from "@earendil-works/pi-ai/utils/uuid";
import * as v from "valibot";
import type { PlannedBlock, ResponsePlan } from "./playback.ts";
import { parseScriptStep, stepToJson, type ScriptStep } from "./steps.ts";
import { mergeUsage } from "./usage.ts";

// Turns one scripted step into the response the provider streams. The wording of error responses is
// chosen so that pi-ai's own classifiers (§3.5) read them the way the step says:
// - `{ error, retryable: true }` carries "503 service unavailable", which `isRetryableAssistantError`
//   matches; `retryable` absent/false carries the author's text alone, and if that text happens to
//   contain transient wording (e.g. "timeout") a quota marker is appended so it stays non-retryable;
// - `{ overflow: true }` uses Anthropic's "prompt is too long" wording plus `context_length_exceeded`,
//   both in `isContextOverflow`'s patterns (and no digits, so no status code can look retryable);
// - `{ length: true }` reports the full output limit as output, so `isRecoverableLength` is false.

export const EXHAUSTED_MESSAGE = "scripted: no step left in scripted/steps";
export const NO_SOURCE_MESSAGE = "scripted: no script is bound to this request (scripted/steps lives in a session)";
export const OVERFLOW_MESSAGE = "scripted: prompt is too long for the model's context window (context_length_exceeded)";
const RETRYABLE_MARKER = "(503 service unavailable, retryable)";
const NON_RETRYABLE_MARKER = "[not retryable: scripted quota exceeded]";

/** What planning a step needs to know about the request. */
export interface PlanInput {
  model: Model<Api>;
  inputTokens: number;
  /** Tool calls already in the conversation; new call ids continue from here (`call_<n>`). */
  toolCallsBefore: number;
  /** The output limit a genuine length stop reports. */
  maxTokens: number;
  /** The provider's clock (a deferred handle's expiry counts from it). */
  now?: number;
}

/** The durable data a scripted deferred handle carries: everything the poll needs. */
const DeferredDataSchema = v.object({
  ready: v.unknown(),
  toolCallsBefore: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 0),
  inputTokens: v.optional(v.pipe(v.number(), v.minValue(0)), 0),
});

export function planStep(step: ScriptStep, input: PlanInput): ResponsePlan {
  const common = {
    inputTokens: input.inputTokens,
    ...(step.usage !== undefined && { usage: step.usage }),
    ...(step.delayMs !== undefined && { delayMs: step.delayMs }),
    ...(step.chunkMs !== undefined && { chunkMs: step.chunkMs }),
  };
  if ("thinking" in step) {
    return { ...common, blocks: [{ type: "thinking", thinking: step.thinking }, text(step.text)], stopReason: "stop" };
  }
  if ("toolCalls" in step) {
    const blocks: PlannedBlock[] = step.toolCalls.map((call, index) => ({
      type: "toolCall",
      id: `call_${input.toolCallsBefore + index + 1}`,
      name: call.name,
      arguments: call.arguments,
    }));
    return { ...common, blocks, stopReason: "toolUse" };
  }
  if ("error" in step) {
    return { ...common, blocks: [], stopReason: "error", errorMessage: scriptedErrorMessage(step.error, step.retryable ?? false) };
  }
  if ("overflow" in step) return { ...common, blocks: [], stopReason: "error", errorMessage: OVERFLOW_MESSAGE };
  if ("length" in step) return { ...common, blocks: [], stopReason: "length", outputTokens: input.maxTokens };
  if ("deferred" in step) {
    const handle: DeferredHandle = {
      provider: input.model.provider,
      modelId: input.model.id,
      api: input.model.api,
      id: `deferred_${uuidv7()}`,
      ...(step.deferred.pollAfterMs !== undefined && { pollAfterMs: step.deferred.pollAfterMs }),
      ...(step.deferred.expiresAfterMs !== undefined && { expiresAt: (input.now ?? Date.now()) + step.deferred.expiresAfterMs }),
      data: {
        ready: stepToJson(step.deferred.ready),
        toolCallsBefore: input.toolCallsBefore,
        inputTokens: input.inputTokens,
      },
    };
    // The submission bills nothing; the poll that returns the ready step reports the usage.
    return { ...common, inputTokens: 0, blocks: [], stopReason: "deferred", deferred: handle };
  }
  return { ...common, blocks: [text(step.text)], stopReason: "stop" };
}

/** A plain error response (non-retryable unless `retryable`). */
export function errorPlan(message: string, inputTokens: number, retryable = false): ResponsePlan {
  return { blocks: [], stopReason: "error", errorMessage: scriptedErrorMessage(message, retryable), inputTokens };
}

/**
 * The answer of `scripted/echo`: the last user message's text, cut at the request's output limit
 * as a real model's would be (about four characters a token; a `length` stop reporting the limit),
 * so an echoed summary request stays as bounded as a real summary.
 */
export function echoPlan(context: TranscriptContext, inputTokens: number, maxTokens: number): ResponsePlan {
  const answer = lastUserText(context);
  const limit = maxTokens * 4;
  if (answer.length <= limit) return { blocks: [text(answer)], stopReason: "stop", inputTokens };
  return { blocks: [text(answer.slice(0, limit))], stopReason: "length", inputTokens, outputTokens: maxTokens };
}

/** Reads a handle this provider issued; a string describes why it is not one. */
export function readDeferredHandle(
  model: Model<Api>,
  handle: DeferredHandle,
): { step: ScriptStep; toolCallsBefore: number; inputTokens: number } | string {
  if (handle.provider !== model.provider || handle.modelId !== model.id || handle.api !== model.api) {
    return `scripted: the deferred handle ${handle.id} belongs to ${handle.provider}/${handle.modelId} (${handle.api}), not ${model.provider}/${model.id}`;
  }
  const data = v.safeParse(DeferredDataSchema, handle.data);
  if (!data.success) return `scripted: the deferred handle ${handle.id} carries no ready step`;
  const ready = parseScriptStep(data.output.ready);
  if (!ready.ok) return `scripted: the ready step of deferred handle ${handle.id} is invalid: ${ready.message}`;
  return { step: ready.step, toolCallsBefore: data.output.toolCallsBefore, inputTokens: data.output.inputTokens };
}

/**
 * The errorMessage of a scripted error, worded so that `isRetryableAssistantError` agrees with
 * `retryable`. Text that names quota or billing exhaustion is non-retryable for pi-ai whatever the
 * marker says, exactly as it would be from a real provider.
 */
export function scriptedErrorMessage(text: string, retryable: boolean): string {
  const base = text.startsWith("scripted:") ? text : `scripted: ${text}`;
  if (retryable) return classifiesRetryable(base) ? base : `${base} ${RETRYABLE_MARKER}`;
  return classifiesRetryable(base) ? `${base} ${NON_RETRYABLE_MARKER}` : base;
}

export function countToolCalls(context: TranscriptContext): number {
  let count = 0;
  for (const message of context.messages) {
    if (message.role !== "assistant") continue;
    for (const block of message.content) if (block.type === "toolCall") count++;
  }
  return count;
}

function classifiesRetryable(errorMessage: string): boolean {
  const probe: AssistantMessage = {
    role: "assistant",
    content: [],
    api: "scripted",
    provider: "scripted",
    model: "script",
    usage: mergeUsage({ input: 0, output: 0 }, undefined),
    stopReason: "error",
    errorMessage,
    timestamp: 0,
  };
  return isRetryableAssistantError(probe);
}

function text(value: string): PlannedBlock {
  return { type: "text", text: value };
}

function lastUserText(context: TranscriptContext): string {
  for (let index = context.messages.length - 1; index >= 0; index--) {
    const message = context.messages[index];
    if (message?.role !== "user") continue;
    if (typeof message.content === "string") return message.content;
    return message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");
  }
  return "";
}
