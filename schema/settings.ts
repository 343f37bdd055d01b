import * as v from "valibot";
import { isKeyedObject } from "./json.ts";
import { utf8Length } from "./utf8.ts";
import { ModelIdentitySchema, QueueModeSchema } from "./lane.ts";

// Durable harness settings (ARCHITECTURE D6): session data at `pi.settings`, captured into each
// operation at acceptance. Validated here once; the engine trusts what passed. Objects are strict:
// an unknown member is refused (400), as the published JSON Schemas say, never silently dropped.

const nonNegativeInt = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
/** Headers (and metadata) sent with every provider request: bounded in number as well as size. */
export const MAX_STREAM_HEADERS = 64;
/**
 * The leading guards of the header and metadata maps and of their patches (json.ts isKeyedObject):
 * a name valibot's record would skip is refused, never dropped. The OpenAPI document describes each
 * map by its guard.
 */
export const StreamHeadersObjectSchema = v.custom<Record<string, unknown>>(
  isKeyedObject,
  "headers and metadata must be objects of strings by name (not __proto__, constructor or prototype)",
);
export const StreamHeadersPatchObjectSchema = v.custom<Record<string, unknown>>(
  isKeyedObject,
  "headers and metadata must be objects of strings or null by name (not __proto__, constructor or prototype)",
);
const headerRecord = v.pipe(
  StreamHeadersObjectSchema,
  v.record(v.pipe(v.string(), v.maxLength(256)), v.pipe(v.string(), v.maxLength(4096))),
  v.check((record) => Object.keys(record).length <= MAX_STREAM_HEADERS, `at most ${MAX_STREAM_HEADERS} entries`),
);

export const RetryPolicySchema = v.strictObject({
  enabled: v.boolean(),
  maxRetries: nonNegativeInt,
  baseDelayMs: nonNegativeInt,
});
export type RetryPolicy = v.InferOutput<typeof RetryPolicySchema>;

export const CompactionSettingsSchema = v.strictObject({
  enabled: v.boolean(),
  reserveTokens: nonNegativeInt,
  keepRecentTokens: nonNegativeInt,
});
export type CompactionSettings = v.InferOutput<typeof CompactionSettingsSchema>;

export const ToolExecutionModeSchema = v.picklist(["sequential", "parallel"]);
export type ToolExecutionMode = v.InferOutput<typeof ToolExecutionModeSchema>;

/** Above every model's output maximum today; bounds what a session may ask for. */
export const MAX_TOKENS_LIMIT = 1_000_000;
/** The widest temperature range a provider takes (OpenAI, Google: 0–2). */
export const TEMPERATURE_LIMIT = 2;

/**
 * Deferred mode (provider-async answers: OpenAI background responses, Anthropic message batches,
 * scripted deferred steps): `true`, or with the longest completion window the caller accepts.
 */
export const DeferredModeSchema = v.union([v.boolean(), v.strictObject({ window: v.optional(v.picklist(["15m", "1h", "24h"])) })]);
export type DeferredMode = v.InferOutput<typeof DeferredModeSchema>;

/** Whether a deferred setting asks for deferred answers. */
export function defersAnswers(mode: DeferredMode | undefined): boolean {
  return mode === true || (typeof mode === "object" && mode !== null);
}

/** Curated provider stream options (reference §7.1): no signal, no lifecycle callbacks. */
export const StreamOptionsSchema = v.strictObject({
  transport: v.optional(v.pipe(v.string(), v.maxLength(64))),
  timeoutMs: v.optional(nonNegativeInt),
  maxRetries: v.optional(nonNegativeInt),
  maxRetryDelayMs: v.optional(nonNegativeInt),
  headers: v.optional(headerRecord),
  metadata: v.optional(headerRecord),
  cacheRetention: v.optional(v.picklist(["none", "short", "long"])),
  /** The longest answer to ask for, in tokens; a model with a lower output maximum gets its maximum. */
  maxTokens: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(MAX_TOKENS_LIMIT))),
  /** Sampling temperature, sent where the model takes one (within its provider's range). */
  temperature: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(TEMPERATURE_LIMIT))),
  deferred: v.optional(DeferredModeSchema),
});
export type StreamOptions = v.InferOutput<typeof StreamOptionsSchema>;

export const HarnessSettingsSchema = v.strictObject({
  systemPrompt: v.nullable(v.pipe(v.string(), v.maxLength(200_000))),
  retry: RetryPolicySchema,
  compaction: CompactionSettingsSchema,
  steeringMode: QueueModeSchema,
  followUpMode: QueueModeSchema,
  toolExecution: ToolExecutionModeSchema,
  streamOptions: StreamOptionsSchema,
  /**
   * The model of a lane created without one (before the tenant's default and the catalog's first
   * model); null: none. Lanes that exist keep theirs.
   */
  defaultModel: v.nullable(ModelIdentitySchema),
});
export type HarnessSettings = v.InferOutput<typeof HarnessSettingsSchema>;

export const DEFAULT_SETTINGS: HarnessSettings = {
  systemPrompt: null,
  retry: { enabled: true, maxRetries: 3, baseDelayMs: 1000 },
  compaction: { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 },
  steeringMode: "all",
  followUpMode: "all",
  toolExecution: "parallel",
  streamOptions: {},
  defaultModel: null,
};

/** Skill and prompt-template names (the keys of `pi.resources`, and a path segment of their routes: `.` and `..` are names no path can carry). */
export const ResourceNameSchema = v.pipe(v.string(), v.regex(/^(?!\.\.?$)[A-Za-z0-9_.-]{1,64}$/, "Names are 1–64 characters of A–Z a–z 0–9 _ . - (not . or .., which no path can name)"));
export const SkillSchema = v.strictObject({
  description: v.optional(v.pipe(v.string(), v.maxLength(4096))),
  content: v.pipe(v.string(), v.maxLength(200_000)),
});
export const PromptTemplateSchema = v.strictObject({
  description: v.optional(v.pipe(v.string(), v.maxLength(4096))),
  content: v.pipe(v.string(), v.maxLength(200_000)),
});
/** The leading guards of the skills and of the prompt templates by name (json.ts isKeyedObject); the OpenAPI document describes each map by its guard. */
export const SkillsObjectSchema = v.custom<Record<string, unknown>>(isKeyedObject, "skills must be an object by name (not __proto__, constructor or prototype)");
export const PromptTemplatesObjectSchema = v.custom<Record<string, unknown>>(isKeyedObject, "promptTemplates must be an object by name (not __proto__, constructor or prototype)");
/**
 * What a session's skills and prompt templates may hold together: each map at most `perKind`
 * names, and their descriptions and contents at most `bytes` counted as JSON (UTF-8, escapes
 * included: a control character takes 6 bytes). They are stored as one JSON value and exported on
 * one line, which an import must take back (its lines are bounded): measured as stored, a PUT
 * within the bound can never pass the storage's own value limit.
 */
export const RESOURCE_LIMITS = { perKind: 100, bytes: 4 * 1024 * 1024 } as const;

/** Why `resources` exceed RESOURCE_LIMITS, or undefined when they fit. */
export function resourcesOverLimit(resources: { skills: Record<string, Skill>; promptTemplates: Record<string, PromptTemplate> }): string | undefined {
  const kinds = [resources.skills, resources.promptTemplates];
  if (kinds.some((items) => Object.keys(items).length > RESOURCE_LIMITS.perKind)) return `at most ${RESOURCE_LIMITS.perKind} skills and ${RESOURCE_LIMITS.perKind} prompt templates`;
  let bytes = 0;
  for (const items of kinds) for (const item of Object.values(items)) bytes += utf8Length(JSON.stringify(item.content)) + utf8Length(JSON.stringify(item.description ?? ""));
  return bytes > RESOURCE_LIMITS.bytes ? `skills and prompt templates of at most ${RESOURCE_LIMITS.bytes / (1024 * 1024)} MiB together (descriptions and contents, as JSON)` : undefined;
}

export const HarnessResourcesSchema = v.pipe(
  v.strictObject({
    skills: v.pipe(SkillsObjectSchema, v.record(ResourceNameSchema, SkillSchema)),
    promptTemplates: v.pipe(PromptTemplatesObjectSchema, v.record(ResourceNameSchema, PromptTemplateSchema)),
  }),
  v.check((resources) => resourcesOverLimit(resources) === undefined, `At most ${RESOURCE_LIMITS.perKind} skills and ${RESOURCE_LIMITS.perKind} prompt templates, of at most 4 MiB together`),
);
export type Skill = v.InferOutput<typeof SkillSchema>;
export type PromptTemplate = v.InferOutput<typeof PromptTemplateSchema>;
export type HarnessResources = v.InferOutput<typeof HarnessResourcesSchema>;
export const EMPTY_RESOURCES: HarnessResources = { skills: {}, promptTemplates: {} };
