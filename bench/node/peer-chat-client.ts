import { randomUUID } from "node:crypto";
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import WsWebSocket from "ws";

// A client of the peer speaking the Agents SDK's WebSocket chat protocol the way `useAgentChat`
// does (agents/dist/ws-chat-transport: WebSocketChatTransport.sendMessages): every turn sends
// `cf_agent_use_chat_request` whose body is `{ messages, trigger: "submit-message" }` with the
// whole conversation, and reads `cf_agent_use_chat_response` frames (one UI message stream chunk
// each) until `done`. The SDK holds the terminal frame until the assistant message is persisted.
// The assistant message is rebuilt with the AI SDK's own `readUIMessageStream`, as `useChat` does.

const TURN_TIMEOUT_MS = 30_000;

/** Which WebSocket client speaks to the peer: Node's own (undici) or the `ws` package (the lean one). */
export type PeerSocket = "node" | "ws";

/** The part of a WebSocket the client uses; both Node's and `ws`'s have it. */
interface ChatSocket {
  readonly readyState: number;
  send(data: string): void;
  close(): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "open" | "close" | "error", listener: () => void, options?: { once: boolean }): void;
}

type ResponseFrame = { type: "cf_agent_use_chat_response"; id: string; body?: string; done?: boolean; error?: boolean };

export class PeerChatClient {
  readonly messages: UIMessage[] = [];
  private readonly waiting = new Map<string, { chunks: UIMessageChunk[]; settle: (error?: Error) => void }>();
  /** Bytes of every frame the server sent (the turn's replies, plus the SDK's own broadcasts). */
  bytesReceived = 0;

  private readonly ws: ChatSocket;

  private constructor(ws: ChatSocket) {
    this.ws = ws;
    ws.addEventListener("message", (event) => {
      const text = typeof event.data === "string" ? event.data : "";
      this.bytesReceived += Buffer.byteLength(text);
      if (!text.includes("cf_agent_use_chat_response")) return;
      const frame: ResponseFrame = JSON.parse(text);
      const turn = this.waiting.get(frame.id);
      if (!turn) return;
      if (frame.error) return turn.settle(new Error(`peer turn failed: ${frame.body ?? ""}`));
      if (frame.body?.trim()) turn.chunks.push(JSON.parse(frame.body));
      if (frame.done) turn.settle();
    });
    ws.addEventListener("close", () => {
      for (const turn of this.waiting.values()) turn.settle(new Error("peer socket closed during a turn"));
    });
  }

  /** Connects to the agent instance `name` (the SDK's route: /agents/<class>/<name>). */
  static async connect(baseUrl: string, name: string, socket: PeerSocket = "node"): Promise<PeerChatClient> {
    const url = `${baseUrl.replace(/^http/, "ws")}/agents/peer-chat/${encodeURIComponent(name)}`;
    const ws: ChatSocket = socket === "ws" ? new WsWebSocket(url) : new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`peer socket ${name} did not open`)), TURN_TIMEOUT_MS);
      ws.addEventListener("open", () => (clearTimeout(timer), resolve()), { once: true });
      ws.addEventListener("error", () => (clearTimeout(timer), reject(new Error(`peer socket ${name} failed`))), { once: true });
    });
    return new PeerChatClient(ws);
  }

  /** One turn: the user message goes out with the conversation; resolves with the persisted answer's text. */
  async turn(text: string): Promise<string> {
    const user: UIMessage = { id: randomUUID(), role: "user", parts: [{ type: "text", text }] };
    this.messages.push(user);
    const requestId = randomUUID().slice(0, 8);
    const chunks: UIMessageChunk[] = [];
    const finished = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`peer turn ${requestId} did not finish`)), TURN_TIMEOUT_MS);
      this.waiting.set(requestId, {
        chunks,
        settle: (error) => {
          clearTimeout(timer);
          this.waiting.delete(requestId);
          if (error) reject(error);
          else resolve();
        },
      });
    });
    const body = JSON.stringify({ messages: this.messages, trigger: "submit-message" });
    this.ws.send(JSON.stringify({ id: requestId, init: { method: "POST", body }, type: "cf_agent_use_chat_request" }));
    await finished;
    let answer: UIMessage | undefined;
    for await (const message of readUIMessageStream<UIMessage>({ stream: streamOf(chunks) })) answer = message;
    if (!answer) throw new Error(`peer turn ${requestId} streamed no message`);
    this.messages.push(answer);
    return answer.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => this.ws.addEventListener("close", () => resolve(), { once: true }));
    this.ws.close();
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2000))]);
  }
}

function streamOf(chunks: readonly UIMessageChunk[]): ReadableStream<UIMessageChunk> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}
