import * as v from "valibot";
import { AI_SDK_MAX_MESSAGES, AiSdkChatRequestSchema, UiMessagesSchema } from "../../schema/ai-sdk.ts";
import { IdSchema } from "../../schema/api.ts";
import { LaneNameSchema } from "../../schema/lane-api.ts";
import { LANE_ERRORS, type CatalogRoute } from "./catalog-types.ts";

const LANE = { sid: IdSchema, lane: LaneNameSchema };
const UI_STREAM = {
  description:
    "The AI SDK's UI-message stream (`text/event-stream` with `x-vercel-ai-ui-message-stream: v1`): `start` (the answer's message id: its first assistant entry's id), then per assistant message a step (`start-step`, text and reasoning parts as `*-start`/`*-delta`/`*-end`, tool calls as `tool-input-available`, results as `tool-output-available` or `tool-output-error`, `finish-step`), and `finish` (`finishReason` `stop`; `tool-calls` when the run waits on client tools), `abort`, or `error` then `finish`; then `data: [DONE]`.",
  content: "sse" as const,
  schema: v.pipe(v.string(), v.description("text/event-stream")),
};

/** The AI SDK's chat protocol on a lane (worker/routes/ai-sdk.ts, docs/ai-sdk.md). */
export const aiSdkCatalog: readonly CatalogRoute[] = [
  {
    method: "post", path: "/v1/sessions/{sid}/lanes/{lane}/ai-sdk", operationId: "aiSdkChat", tag: "Operations", auth: "tenant",
    summary: "Chat through the AI SDK (useChat)",
    description: `The body \`DefaultChatTransport\` sends: \`{ id, messages, trigger, messageId? }\` (at most ${AI_SDK_MAX_MESSAGES} messages within the 1 MiB body bound; the lane keeps the history, so a page may send only the newest message). The newest user message is the prompt (text parts joined; images as base64 \`data:\` URLs), exactly once per message id: sending the same message again follows the run it started. An assistant message as the newest carries client-tool results (tool parts with \`output-available\` or \`output-error\`): they are posted to the run that waits on them and its answer continues. \`trigger: "regenerate-message"\` moves the lane back to before its last user message and prompts it again. \`ifBusy\` (added through the transport's \`body\`) as for \`POST …/prompt\`.`,
    pathParams: LANE, body: AiSdkChatRequestSchema,
    example: { id: "chat-1", messages: [{ id: "msg-1", role: "user", parts: [{ type: "text", text: "Hello" }] }], trigger: "submit-message" },
    responses: { 200: UI_STREAM },
    errors: [...LANE_ERRORS, "InvalidMessage", "LaneBusy", "QueueFull", "RateLimited", "IdempotencyConflict", "IdempotencyInProgress", "UnknownToolCall", "ToolResultConflict", "LimitExceeded"],
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/ai-sdk/messages", operationId: "aiSdkMessages", tag: "Watch", auth: "tenant",
    summary: "A lane's conversation as AI SDK UIMessages",
    description: "For a page's initial `messages`: the lane's transcript (its newest part, as the snapshot bounds it), user messages and assistant answers (one `UIMessage` per answer, one `step-start` per assistant message, tool parts `tool-<name>`). While a run is live only its prompt is included: resuming the stream (`GET …/ai-sdk/{sid}/stream`) replays its answer.",
    pathParams: LANE,
    responses: { 200: { description: "`UIMessage[]`, oldest first", schema: UiMessagesSchema } },
    errors: LANE_ERRORS,
  },
  {
    method: "get", path: "/v1/sessions/{sid}/lanes/{lane}/ai-sdk/{chatId}/stream", operationId: "aiSdkResumeStream", tag: "Watch", auth: "tenant",
    summary: "Resume a lane's answer (the AI SDK transport's resumption)",
    description: "`chatId` is the session id (`useChat({ id: sessionId, resume: true })`); any other is 404 `NotFound`. The live run's answer from its start, then live, as `POST …/ai-sdk` streams it; 204 when no run is live on the lane (idle, or a deferred run suspended).",
    pathParams: { ...LANE, chatId: IdSchema },
    responses: { 200: UI_STREAM, 204: { description: "No run is live", content: "none" } },
    errors: [...LANE_ERRORS, "NotFound"],
  },
];
