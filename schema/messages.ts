import * as v from "valibot";
import { JsonObjectSchema, JsonValueSchema } from "./json.ts";
import { UsageSchema } from "./usage.ts";

// Message shapes follow pi-ai's format (user / assistant / toolResult with content blocks) plus the
// harness's own roles. Inputs are validated against these shapes (unknown keys are stripped); a
// message pi-ai produced keeps any further fields it carries when the harness stores it.

const timestamp = v.pipe(v.number(), v.finite());

export const TextContentSchema = v.object({
  type: v.literal("text"),
  text: v.string(),
  textSignature: v.optional(v.string()),
});
export const ThinkingContentSchema = v.object({
  type: v.literal("thinking"),
  thinking: v.string(),
  thinkingSignature: v.optional(v.string()),
  redacted: v.optional(v.boolean()),
});
export const ImageContentSchema = v.object({
  type: v.literal("image"),
  data: v.string(),
  mimeType: v.string(),
});
export const ToolCallSchema = v.object({
  type: v.literal("toolCall"),
  id: v.string(),
  name: v.string(),
  arguments: JsonObjectSchema,
  thoughtSignature: v.optional(v.string()),
});
export type TextContent = v.InferOutput<typeof TextContentSchema>;
export type ThinkingContent = v.InferOutput<typeof ThinkingContentSchema>;
export type ImageContent = v.InferOutput<typeof ImageContentSchema>;
export type ToolCall = v.InferOutput<typeof ToolCallSchema>;

export const StopReasonSchema = v.picklist(["pending", "stop", "length", "toolUse", "error", "aborted", "deferred"]);
export type StopReason = v.InferOutput<typeof StopReasonSchema>;

export const DeferredHandleSchema = v.object({
  provider: v.string(),
  modelId: v.string(),
  api: v.string(),
  id: v.string(),
  expiresAt: v.optional(v.number()),
  pollAfterMs: v.optional(v.number()),
  data: v.optional(JsonValueSchema),
});
export type DeferredHandle = v.InferOutput<typeof DeferredHandleSchema>;

export const UserMessageSchema = v.object({
  role: v.literal("user"),
  content: v.union([v.string(), v.array(v.variant("type", [TextContentSchema, ImageContentSchema]))]),
  timestamp,
});
export const AssistantMessageSchema = v.object({
  role: v.literal("assistant"),
  content: v.array(v.variant("type", [TextContentSchema, ThinkingContentSchema, ToolCallSchema])),
  api: v.string(),
  provider: v.string(),
  model: v.string(),
  usage: UsageSchema,
  stopReason: StopReasonSchema,
  deferred: v.optional(DeferredHandleSchema),
  errorMessage: v.optional(v.string()),
  timestamp,
});
export const ToolResultMessageSchema = v.object({
  role: v.literal("toolResult"),
  toolCallId: v.string(),
  toolName: v.string(),
  content: v.array(v.variant("type", [TextContentSchema, ImageContentSchema])),
  details: v.optional(JsonValueSchema),
  usage: v.optional(UsageSchema),
  addedToolNames: v.optional(v.array(v.string())),
  isError: v.boolean(),
  timestamp,
});
/** Harness roles: projected into provider context by the default converter (reference §6.4). */
export const CompactionSummaryMessageSchema = v.object({
  role: v.literal("compactionSummary"),
  summary: v.string(),
  tokensBefore: v.number(),
  timestamp,
});
export const BranchSummaryMessageSchema = v.object({
  role: v.literal("branchSummary"),
  summary: v.string(),
  fromId: v.nullable(v.string()),
  timestamp,
});
export const CustomMessageSchema = v.object({
  role: v.literal("custom"),
  customType: v.string(),
  content: v.union([v.string(), v.array(v.variant("type", [TextContentSchema, ImageContentSchema]))]),
  display: v.optional(v.boolean()),
  details: v.optional(JsonValueSchema),
  timestamp,
});
export const BashExecutionMessageSchema = v.object({
  role: v.literal("bashExecution"),
  command: v.string(),
  output: v.string(),
  exitCode: v.optional(v.nullable(v.number())),
  timestamp,
});

export const AgentMessageSchema = v.variant("role", [
  UserMessageSchema,
  AssistantMessageSchema,
  ToolResultMessageSchema,
  CompactionSummaryMessageSchema,
  BranchSummaryMessageSchema,
  CustomMessageSchema,
  BashExecutionMessageSchema,
]);
export type UserMessage = v.InferOutput<typeof UserMessageSchema>;
export type AssistantMessage = v.InferOutput<typeof AssistantMessageSchema>;
export type ToolResultMessage = v.InferOutput<typeof ToolResultMessageSchema>;
export type AgentMessage = v.InferOutput<typeof AgentMessageSchema>;

// Input messages (request bodies): `timestamp` may be left out; the server stamps it on arrival.
// Stored and streamed messages always carry one (AgentMessageSchema above).

const inputTimestamp = v.optional(timestamp);

/** An AgentMessage as a client sends it: like AgentMessageSchema, `timestamp` optional and stamped on arrival. */
export const AgentMessageInputSchema = v.pipe(
  v.variant("role", [
    v.object({ ...UserMessageSchema.entries, timestamp: inputTimestamp }),
    v.object({ ...AssistantMessageSchema.entries, timestamp: inputTimestamp }),
    v.object({ ...ToolResultMessageSchema.entries, timestamp: inputTimestamp }),
    v.object({ ...CompactionSummaryMessageSchema.entries, timestamp: inputTimestamp }),
    v.object({ ...BranchSummaryMessageSchema.entries, timestamp: inputTimestamp }),
    v.object({ ...CustomMessageSchema.entries, timestamp: inputTimestamp }),
    v.object({ ...BashExecutionMessageSchema.entries, timestamp: inputTimestamp }),
  ]),
  v.transform((message): AgentMessage => ({ ...message, timestamp: message.timestamp ?? Date.now() })),
);
