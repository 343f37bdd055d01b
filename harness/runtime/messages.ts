import type { AgentMessage, ImageContent, UserMessage } from "../../schema/messages.ts";

export type InvalidMessageReason = "empty" | "pending_assistant" | "images_with_non_user";
export type PromptInput = string | AgentMessage | AgentMessage[];

/**
 * Normalizes a prompt into the messages a run places (reference §3.1): text and images become one
 * user message stamped now; an empty string without images becomes no message at all.
 */
export function normalizePrompt(
  prompt: PromptInput,
  images: readonly ImageContent[] | undefined,
  now: number,
): { ok: true; messages: AgentMessage[] } | { ok: false; reason: InvalidMessageReason } {
  if (typeof prompt === "string") {
    if (prompt.length === 0 && (images === undefined || images.length === 0)) return { ok: true, messages: [] };
    return { ok: true, messages: [userMessage(prompt, images, now)] };
  }
  const given = Array.isArray(prompt) ? prompt : [prompt];
  if (images !== undefined && images.length > 0 && given.some((message) => message.role !== "user")) {
    return { ok: false, reason: "images_with_non_user" };
  }
  // Images given beside user messages join the last of them.
  const messages = withImages(given, images);
  for (const message of messages) {
    const reason = invalidReason(message) ?? (emptyUserMessage(message) ? "empty" : undefined);
    if (reason) return { ok: false, reason };
  }
  return { ok: true, messages };
}

/** A queued input (steer, followUp, nextRun): never empty, never a pending assistant. */
export function normalizeQueued(
  input: string | AgentMessage,
  images: readonly ImageContent[] | undefined,
  now: number,
): { ok: true; message: AgentMessage } | { ok: false; reason: InvalidMessageReason } {
  if (typeof input === "string") {
    if (input.length === 0 && (images === undefined || images.length === 0)) return { ok: false, reason: "empty" };
    return { ok: true, message: userMessage(input, images, now) };
  }
  if (images !== undefined && images.length > 0 && input.role !== "user") return { ok: false, reason: "images_with_non_user" };
  const reason = invalidReason(input);
  const [message] = withImages([input], images);
  if (reason || !message) return { ok: false, reason: reason ?? "empty" };
  return emptyUserMessage(message) ? { ok: false, reason: "empty" } : { ok: true, message };
}

/**
 * A user message with nothing in it (`""` or `[]`, no image joined): refused as a prompt or queued
 * input as the empty string is (an entry appended directly is stored as given).
 */
function emptyUserMessage(message: AgentMessage): boolean {
  return message.role === "user" && message.content.length === 0;
}

export function invalidReason(message: AgentMessage): InvalidMessageReason | undefined {
  if (message.role === "assistant" && message.stopReason === "pending") return "pending_assistant";
  return undefined;
}

export function userMessage(text: string, images: readonly ImageContent[] | undefined, now: number): UserMessage {
  if (images === undefined || images.length === 0) return { role: "user", content: text, timestamp: now };
  return {
    role: "user",
    content: [...(text.length > 0 ? [{ type: "text" as const, text }] : []), ...images],
    timestamp: now,
  };
}

function withImages(messages: readonly AgentMessage[], images: readonly ImageContent[] | undefined): AgentMessage[] {
  if (images === undefined || images.length === 0) return [...messages];
  const last = messages.length - 1;
  return messages.map((message, index) => {
    if (index !== last || message.role !== "user") return message;
    const content = typeof message.content === "string" ? (message.content.length > 0 ? [{ type: "text" as const, text: message.content }] : []) : message.content;
    return { ...message, content: [...content, ...images] };
  });
}
