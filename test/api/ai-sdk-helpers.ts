import { DefaultChatTransport, isStaticToolUIPart, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { exports } from "cloudflare:workers";

// The AI SDK's own client side against the lane's `…/ai-sdk` routes (served by the real Hono app):
// its `DefaultChatTransport` sends exactly what `useChat` sends, and `readUIMessageStream` folds the
// answer as `useChat` does.

export interface ChatLane {
  key: string;
  sid: string;
  lanePath: string;
}

/** The transport a page would build: `api` at the lane, the key (or a browser token) as bearer. */
export function transportOf(lane: ChatLane, credential = lane.key): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport({
    api: `http://api.test${lane.lanePath}/ai-sdk`,
    headers: { authorization: `Bearer ${credential}` },
    fetch: (input, init) => exports.default.fetch(new Request(input, init)),
  });
}

/** The answer a stream folds to (the last message `readUIMessageStream` yields), continuing `message` when given. */
export async function folded(stream: ReadableStream<UIMessageChunk>, message?: UIMessage): Promise<UIMessage> {
  let last: UIMessage | undefined;
  for await (const current of readUIMessageStream({ stream, ...(message && { message }) })) last = current;
  if (!last) throw new Error("The stream yielded no message");
  return last;
}

/** Sends `messages` as `useChat` would (`submit-message` unless told) and folds the answer. */
export async function send(lane: ChatLane, messages: UIMessage[], options: { trigger?: "submit-message" | "regenerate-message"; continuing?: UIMessage } = {}): Promise<UIMessage> {
  const stream = await transportOf(lane).sendMessages({
    chatId: lane.sid,
    messages,
    abortSignal: undefined,
    trigger: options.trigger ?? "submit-message",
    messageId: undefined,
  });
  return folded(stream, options.continuing);
}

let counter = 0;

/** A user message as `useChat` makes one. */
export function userMessage(text: string, id = `msg-${Date.now().toString(36)}-${(counter++).toString(36)}`): UIMessage {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

/** The texts of a message's text parts, joined. */
export function textOf(message: UIMessage): string {
  return message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}

/** `GET …/ai-sdk/messages`. */
export async function pageMessages(lane: ChatLane): Promise<UIMessage[]> {
  const response = await exports.default.fetch(`http://api.test${lane.lanePath}/ai-sdk/messages`, { headers: { authorization: `Bearer ${lane.key}` } });
  if (response.status !== 200) throw new Error(`GET …/ai-sdk/messages answered ${response.status}: ${await response.text()}`);
  return response.json();
}

/** What a page's `addToolOutput` does to its message: the call's part gets its output. */
export function withToolOutput(message: UIMessage, toolCallId: string, output: string): UIMessage {
  return {
    ...message,
    parts: message.parts.map((part) => (isStaticToolUIPart(part) && part.toolCallId === toolCallId ? { type: part.type, toolCallId, state: "output-available", input: part.input, output } : part)),
  };
}
