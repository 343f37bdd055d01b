import type { AssistantMessage, UserMessage } from "../../schema/messages.ts";
import { zeroUsage } from "../../harness/session/usage.ts";

export function userMessage(text: string, timestamp = 1): UserMessage {
  return { role: "user", content: text, timestamp };
}

export function assistantMessage(text: string, stopReason: AssistantMessage["stopReason"] = "stop"): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "scripted",
    provider: "scripted",
    model: "echo",
    usage: zeroUsage(),
    stopReason,
    timestamp: 1,
  };
}
