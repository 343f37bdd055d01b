import { utf8Length } from "../../../schema/utf8.ts";

// The frames the watch hub sends (watch-hub.ts), each made once for every socket that gets it:
// a JSON message, a `batch` of messages already serialized, or Server-Sent Events bytes for the
// front worker's passing-through relays.

/**
 * A server message and its size in bytes (what flow control counts), made once for every socket:
 * JSON text, or the bytes of Server-Sent Events for a passing-through relay.
 */
export type Outgoing = { text: string; bytes: number } | { binary: Uint8Array; bytes: number };
export type JsonOutgoing = { text: string; bytes: number };

const encoder = new TextEncoder();

export function outgoing(message: object): JsonOutgoing {
  const text = JSON.stringify(message);
  return { text, bytes: utf8Length(text) };
}

/** `{"type":"batch","messages":[…]}` around messages already serialized (their text is reused). */
export function batchOf(messages: JsonOutgoing[]): Outgoing {
  const head = '{"type":"batch","messages":[';
  const text = `${head}${messages.map((message) => message.text).join(",")}]}`;
  const bytes = head.length + 2 + (messages.length - 1) + messages.reduce((sum, message) => sum + message.bytes, 0);
  return { text, bytes };
}

/**
 * Messages as Server-Sent Events (docs/api-watch.md "Streaming over HTTP (SSE)"), encoded once:
 * `event: <name>`, `id: <epoch>.<seq>`, `data: <the socket's message>`, what the front worker's
 * relay writes to its stream as received (worker/watch/sse-relay.ts).
 */
export function sseOf(epoch: string, messages: { name: "snapshot" | "event"; seq: number; message: JsonOutgoing }[]): Outgoing {
  const text = messages.map(({ name, seq, message }) => `event: ${name}\nid: ${epoch}.${seq}\ndata: ${message.text}\n\n`).join("");
  const binary = encoder.encode(text);
  return { binary, bytes: binary.byteLength };
}

