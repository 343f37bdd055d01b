import * as v from "valibot";
import { JsonValueSchema, type JsonValue } from "./json.ts";
import { IfBusySchema } from "./lane-api.ts";

// The AI SDK's chat wire (its `DefaultChatTransport` and UI-message stream protocol, `ai` 5 and
// later), as far as a lane speaks it: the request the transport sends, the `UIMessage` shape of
// `GET …/ai-sdk/messages`, and the stream chunks `POST …/ai-sdk` answers with. The lane keeps the
// history, so of a request only the newest message is read (worker/ai-sdk/chat-request.ts).

/** At most this many messages in one request (the transport sends the page's whole conversation). */
export const AI_SDK_MAX_MESSAGES = 10_000;
/** At most this many parts in one message. */
export const AI_SDK_MAX_PARTS = 1_000;

/** One part of a message the transport sends: its `type`, and whatever members that type has (read where used). */
export const UiPartInputSchema = v.looseObject({ type: v.pipe(v.string(), v.minLength(1), v.maxLength(200)) });

const UiMessageInputSchema = v.looseObject({
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
  role: v.picklist(["system", "user", "assistant"]),
  parts: v.pipe(v.array(UiPartInputSchema), v.maxLength(AI_SDK_MAX_PARTS)),
});
export type UiMessageInput = v.InferOutput<typeof UiMessageInputSchema>;

/**
 * `POST …/lanes/{lane}/ai-sdk`: what `DefaultChatTransport` sends (`{ id, messages, trigger,
 * messageId? }`), plus fields a page may add through the transport's `body` option (`ifBusy`);
 * other added fields are ignored. `id` is the chat's id (the page may use the session id).
 */
export const AiSdkChatRequestSchema = v.looseObject({
  id: v.optional(v.pipe(v.string(), v.maxLength(256))),
  messages: v.pipe(v.array(UiMessageInputSchema), v.minLength(1), v.maxLength(AI_SDK_MAX_MESSAGES)),
  trigger: v.optional(v.picklist(["submit-message", "regenerate-message"]), "submit-message"),
  messageId: v.optional(v.pipe(v.string(), v.maxLength(256))),
  ifBusy: v.optional(IfBusySchema),
});
export type AiSdkChatRequest = v.InferOutput<typeof AiSdkChatRequestSchema>;

/** A tool part's state as the AI SDK names it. */
const ToolPartStateSchema = v.picklist(["input-available", "output-available", "output-error"]);

/** The parts `GET …/ai-sdk/messages` answers with (the AI SDK's `UIMessage` parts of these types). */
export const UiPartSchema = v.variant("type", [
  v.object({ type: v.literal("text"), text: v.string(), state: v.optional(v.literal("done")) }),
  v.object({ type: v.literal("reasoning"), text: v.string(), state: v.optional(v.literal("done")) }),
  v.object({ type: v.literal("file"), mediaType: v.string(), url: v.string() }),
  v.object({ type: v.literal("step-start") }),
  v.object({
    type: v.pipe(v.string(), v.startsWith("tool-")),
    toolCallId: v.string(),
    state: ToolPartStateSchema,
    input: JsonValueSchema,
    output: v.optional(JsonValueSchema),
    errorText: v.optional(v.string()),
  }),
]);
export type UiPart =
  | { type: "text"; text: string; state?: "done" }
  | { type: "reasoning"; text: string; state?: "done" }
  | { type: "file"; mediaType: string; url: string }
  | { type: "step-start" }
  | { type: `tool-${string}`; toolCallId: string; state: "input-available" | "output-available" | "output-error"; input: JsonValue; output?: JsonValue; errorText?: string };

export const UiMessageSchema = v.object({
  id: v.string(),
  role: v.picklist(["user", "assistant"]),
  parts: v.array(UiPartSchema),
});
export interface UiMessage {
  id: string;
  role: "user" | "assistant";
  parts: UiPart[];
}

/** `GET …/ai-sdk/messages`: the lane's conversation, oldest first. */
export const UiMessagesSchema = v.pipe(v.array(UiMessageSchema), v.description("The lane's conversation as AI SDK `UIMessage[]`, oldest first"));

/** One chunk of the UI-message stream this service writes (a subset of the AI SDK's `UIMessageChunk`). */
export type UiChunk =
  | { type: "start"; messageId?: string }
  | { type: "start-step" }
  | { type: "finish-step" }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string }
  | { type: "reasoning-start"; id: string }
  | { type: "reasoning-delta"; id: string; delta: string }
  | { type: "reasoning-end"; id: string }
  /** `providerExecuted`: the service runs the call (the page's `onToolCall` is not asked, and the AI SDK's completeness check skips it). */
  | { type: "tool-input-available"; toolCallId: string; toolName: string; input: JsonValue; providerExecuted?: boolean }
  | { type: "tool-output-available"; toolCallId: string; output: JsonValue }
  | { type: "tool-output-error"; toolCallId: string; errorText: string }
  | { type: "steering-message"; id: string; parts: { type: "text"; text: string }[] }
  | { type: "error"; errorText: string }
  | { type: "abort"; reason?: string }
  | { type: "finish"; finishReason?: "stop" | "length" | "tool-calls" | "error" | "other" };

/** The header that marks a UI-message stream (the AI SDK's `UI_MESSAGE_STREAM_HEADERS`). */
export const UI_MESSAGE_STREAM_HEADER = { name: "x-vercel-ai-ui-message-stream", value: "v1" } as const;
