import * as v from "valibot";
import type { AiSdkChatRequest, UiMessageInput } from "../../schema/ai-sdk.ts";
import { ImagesSchema, type IfBusy } from "../../schema/lane-api.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { ImageContent } from "../../schema/messages.ts";
import { ClientToolResultSchema, type ClientToolResult } from "../../schema/tools.ts";
import { fail, invalidInput } from "../http-error.ts";

// What one `POST …/ai-sdk` asks for (docs/ai-sdk.md). The lane keeps the history, so only the
// newest message is read: a user message is a prompt; an assistant message carries the page's
// client-tool results (its tool parts with an output); `trigger: "regenerate-message"` asks for a
// new answer to the newest user message the page sends (the AI SDK's `regenerate()` drops the
// answer and sends the messages up to that one).

export type PromptAction = { kind: "prompt"; messageId: string; prompt: string; images: ImageContent[]; ifBusy: IfBusy | undefined };
export type ChatAction =
  | PromptAction
  | { kind: "tool-results"; messageId: string; steps: number; results: { toolCallId: string; result: ClientToolResult }[] }
  | { kind: "regenerate"; asked: PromptAction };

/** An image the page attached: a base64 `data:` URL (this service fetches no URLs for a prompt). */
const DATA_URL = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=]*)$/i;

export function chatAction(body: AiSdkChatRequest): ChatAction {
  if (body.trigger === "regenerate-message") {
    const asked = body.messages.findLast((message) => message.role === "user");
    if (!asked) throw fail("InvalidMessage", "There is no user message to answer again");
    return { kind: "regenerate", asked: promptOf(asked, body.ifBusy) };
  }
  const newest = body.messages[body.messages.length - 1];
  if (!newest) throw fail("ValidationFailed", "messages: at least one message is required");
  if (newest.role === "user") return promptOf(newest, body.ifBusy);
  if (newest.role === "assistant") return toolResultsOf(newest);
  throw fail("InvalidMessage", "The newest message must be the user's (a prompt) or the assistant's (client-tool results)");
}

function promptOf(message: UiMessageInput, ifBusy: IfBusy | undefined): PromptAction {
  const texts: string[] = [];
  const images: ImageContent[] = [];
  message.parts.forEach((part, index) => {
    if (part.type === "text") {
      if (typeof part.text !== "string") throw invalidInput(`messages[-1].parts[${index}].text`, "must be a string");
      texts.push(part.text);
    } else if (part.type === "file") {
      if (typeof part.url !== "string") throw invalidInput(`messages[-1].parts[${index}].url`, "must be a string");
      const url = DATA_URL.exec(part.url);
      if (!url?.[1] || url[2] === undefined) throw fail("InvalidMessage", "A file part must be an image as a base64 `data:` URL (this service fetches no URLs)");
      images.push({ type: "image", mimeType: url[1], data: url[2] });
    }
  });
  const prompt = texts.join("\n");
  // The bounds of a prompt's images (POST …/prompt): the same message must not be larger here.
  const checked = v.safeParse(ImagesSchema, images);
  if (!checked.success) throw invalidInput("messages[-1].parts", checked.issues[0]?.message ?? "holds more images than a prompt takes");
  if (prompt.trim() === "" && images.length === 0) throw fail("InvalidMessage", "The newest user message has no text or image");
  return { kind: "prompt", messageId: message.id, prompt, images, ifBusy };
}

/** The tool parts of the assistant message that hold a result the page produced (its client tools). */
function toolResultsOf(message: UiMessageInput): ChatAction {
  const results: { toolCallId: string; result: ClientToolResult }[] = [];
  let steps = 0;
  message.parts.forEach((part, index) => {
    if (part.type === "step-start") steps += 1;
    const isTool = part.type.startsWith("tool-") || part.type === "dynamic-tool";
    if (!isTool || typeof part.toolCallId !== "string") return;
    if (part.state === "output-available") results.push({ toolCallId: part.toolCallId, result: bounded(resultOf(jsonOf(part.output), false), index, "output") });
    else if (part.state === "output-error") {
      results.push({ toolCallId: part.toolCallId, result: bounded(resultOf(typeof part.errorText === "string" ? part.errorText : "The tool failed", true), index, "errorText") });
    }
  });
  return { kind: "tool-results", messageId: message.id, steps, results };
}

/**
 * A result within the bounds `POST …/tool-results/{toolCallId}` enforces (its size, its details'
 * depth), checked for every part before any is placed: 400 otherwise, nothing written.
 */
function bounded(result: ClientToolResult, index: number, member: "output" | "errorText"): ClientToolResult {
  const checked = v.safeParse(ClientToolResultSchema, result);
  if (checked.success) return checked.output;
  throw invalidInput(`messages[-1].parts[${index}].${member}`, checked.issues[0]?.message ?? "is not a tool result this service can keep");
}

/** A page's output as a tool result: its text (JSON when not a string), the value itself as `details`. */
function resultOf(output: JsonValue, isError: boolean): ClientToolResult {
  if (typeof output === "string") return { content: [{ type: "text", text: output }], isError };
  return { content: [{ type: "text", text: JSON.stringify(output) }], details: output, isError };
}

/** A part's `output` (parsed from JSON, so JSON already; undefined becomes null). */
function jsonOf(value: unknown): JsonValue {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
