import * as v from "valibot";
import { JsonObjectSchema, JsonValueSchema, type JsonObject, type JsonValue } from "../../schema/json.ts";
import { MAX_USAGE_COST, MAX_USAGE_TOKENS } from "../../schema/usage.ts";

// One step of the scripted model (API.md "The scripted model"): what the provider answers to one
// request. Steps are stored as plain JSON in the session list `scripted/steps`, so every element is
// validated when it is taken; an element that fails yields an error step describing why.

/** Partial usage numbers; each given number replaces the deterministic default. */
export interface ScriptUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  cacheWrite1h?: number;
  reasoning?: number;
  totalTokens?: number;
  cost?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; total?: number };
}

/** Options every step may carry. */
export interface StepOptions {
  usage?: ScriptUsage;
  /** Stream the content in several chunks (text: one chunk per word), waiting this long between them. */
  chunkMs?: number;
  /** Wait this long before answering (before `start`). Listed for text steps; accepted on every step. */
  delayMs?: number;
}

export interface ScriptToolCall {
  name: string;
  arguments: JsonObject;
}

export type TextStep = StepOptions & { text: string };
export type ToolCallsStep = StepOptions & { toolCalls: ScriptToolCall[] };
export type ErrorStep = StepOptions & { error: string; retryable?: boolean };
export type OverflowStep = StepOptions & { overflow: true };
export type LengthStep = StepOptions & { length: true };
export type DeferredStep = StepOptions & { deferred: { pollAfterMs?: number; expiresAfterMs?: number; ready: ScriptStep } };
export type ThinkingStep = StepOptions & { thinking: string; text: string };

export type ScriptStep = TextStep | ToolCallsStep | ErrorStep | OverflowStep | LengthStep | DeferredStep | ThinkingStep;

// Usage numbers within the bounds of one request's usage (schema/usage.ts): a script cannot make
// the ledger's sums overflow. Refused when the step is appended through the API (400).
const count = v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(MAX_USAGE_TOKENS));
const money = v.pipe(v.number(), v.finite(), v.minValue(0), v.maxValue(MAX_USAGE_COST));
const millis = v.pipe(v.number(), v.finite(), v.minValue(0, "must be 0 or more (milliseconds)"), v.maxValue(600_000, "must be at most 600000 ms (10 minutes)"));

export const ScriptUsageSchema = v.strictObject({
  input: v.optional(count),
  output: v.optional(count),
  cacheRead: v.optional(count),
  cacheWrite: v.optional(count),
  cacheWrite1h: v.optional(count),
  reasoning: v.optional(count),
  totalTokens: v.optional(count),
  cost: v.optional(
    v.strictObject({
      input: v.optional(money),
      output: v.optional(money),
      cacheRead: v.optional(money),
      cacheWrite: v.optional(money),
      total: v.optional(money),
    }),
  ),
});

const options = {
  usage: v.optional(ScriptUsageSchema),
  chunkMs: v.optional(millis),
  delayMs: v.optional(millis),
};

const ScriptToolCallSchema = v.strictObject({ name: v.pipe(v.string(), v.minLength(1)), arguments: JsonObjectSchema });

const TextStepSchema = v.strictObject({ text: v.string(), ...options });
const ToolCallsStepSchema = v.strictObject({ toolCalls: v.array(ScriptToolCallSchema), ...options });
const ErrorStepSchema = v.strictObject({ error: v.string(), retryable: v.optional(v.boolean()), ...options });
const OverflowStepSchema = v.strictObject({ overflow: v.literal(true), ...options });
const LengthStepSchema = v.strictObject({ length: v.literal(true), ...options });
const DeferredStepSchema = v.strictObject({
  deferred: v.strictObject({
    pollAfterMs: v.optional(millis),
    expiresAfterMs: v.optional(millis),
    ready: v.lazy((): v.GenericSchema<ScriptStep> => ScriptStepSchema),
  }),
  ...options,
});
const ThinkingStepSchema = v.strictObject({ thinking: v.string(), text: v.string(), ...options });

/** Which variant a step means, decided by its distinguishing key (first match wins). */
const VARIANTS = [
  ["thinking", ThinkingStepSchema],
  ["toolCalls", ToolCallsStepSchema],
  ["error", ErrorStepSchema],
  ["overflow", OverflowStepSchema],
  ["length", LengthStepSchema],
  ["deferred", DeferredStepSchema],
  ["text", TextStepSchema],
] as const;

/** The schema of one scripted step: exactly one of the API.md shapes, no unknown keys. */
export const ScriptStepSchema: v.GenericSchema<ScriptStep> = v.union([
  ThinkingStepSchema,
  ToolCallsStepSchema,
  ErrorStepSchema,
  OverflowStepSchema,
  LengthStepSchema,
  DeferredStepSchema,
  TextStepSchema,
]);

export type StepParse = { ok: true; step: ScriptStep } | { ok: false; message: string };

/** Validates one stored element, naming the first problem in a readable way when it fails. */
export function parseScriptStep(input: unknown): StepParse {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return { ok: false, message: `expected a step object, got ${describeType(input)}` };
  }
  const variant = VARIANTS.find(([key]) => key in input);
  if (!variant) {
    return { ok: false, message: `a step needs one of ${VARIANTS.map(([key]) => key).join(", ")}` };
  }
  const parsed = v.safeParse(variant[1], input);
  if (parsed.success) return { ok: true, step: parsed.output };
  return { ok: false, message: `${variant[0]} step: ${describeIssues(parsed.issues)}` };
}

/** The stored form of a step: plain JSON, absent optional fields dropped. */
export function stepToJson(step: ScriptStep): JsonValue {
  const json: unknown = JSON.parse(JSON.stringify(step));
  return v.parse(JsonValueSchema, json);
}

function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues
    .slice(0, 3)
    .map((issue) => {
      const path = v.getDotPath(issue);
      const key = path?.split(".").at(-1);
      if (issue.type === "strict_object" && issue.expected === "never") return `unknown key "${key}"`;
      if (issue.type === "strict_object" && issue.received === "undefined") return `${path}: missing`;
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join("; ");
}

function describeType(input: unknown): string {
  if (input === null) return "null";
  return Array.isArray(input) ? "an array" : typeof input;
}
