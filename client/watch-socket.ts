import { utf8Length } from "../schema/utf8.ts";
import { WATCH_ACK_EVERY_BYTES, type LaneWatchMessage } from "../schema/watch.ts";
import { path } from "./http.ts";

// The socket side of watchLane: the WebSocket surface it needs, the watch URL and subprotocol, and
// the envelope check of server messages.

/** The browser WebSocket surface the replica needs; `globalThis.WebSocket` fits, so do adapters. */
export interface WatchSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: "error", listener: (event: unknown) => void): void;
}

export type WatchSocketConstructor = new (url: string, protocols?: string | string[]) => WatchSocket;

/** `ws(s)://…/v1/sessions/{sid}/lanes/{lane}/watch` from an http(s) base URL. */
export function laneWatchUrl(baseUrl: string, sessionId: string, lane: string): string {
  const base = baseUrl.replace(/\/+$/, "").replace(/^http(s?):\/\//i, (_match, secure: string) => `ws${secure}://`);
  return `${base}/v1/sessions${path(sessionId)}/lanes${path(lane)}/watch`;
}

/** The subprotocol a browser authenticates a watch with. */
export const bearerProtocol = (key: string): string => `bearer.${key}`;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The messages of one server frame, in order: a `batch` frame (sockets opened with `?batch=true`)
 * holds several event messages; any other frame is one message. Each is checked for its envelope
 * (type, integer seq, an object payload); the payload itself is trusted as the server's
 * LaneSnapshot / event: the fold ignores what it does not know. Undefined when unreadable.
 */
export function parseWatchFrame(text: string): LaneWatchMessage[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (isRecord(parsed) && parsed.type === "batch") {
    const messages = parsed.messages;
    return Array.isArray(messages) && messages.length > 0 && messages.every(isLaneWatchMessage) ? messages : undefined;
  }
  return isLaneWatchMessage(parsed) ? [parsed] : undefined;
}

function isLaneWatchMessage(value: unknown): value is LaneWatchMessage {
  if (!isRecord(value) || typeof value.seq !== "number" || !Number.isSafeInteger(value.seq)) return false;
  if (value.type === "snapshot") return isRecord(value.snapshot);
  return value.type === "event" && isRecord(value.event) && typeof value.event.type === "string";
}

/**
 * The client half of flow control: counts the UTF-8 bytes of every server message but the
 * runtime's `pong`, and acknowledges the total (`{"type":"ack","bytes":n}`) each time another
 * `WATCH_ACK_EVERY_BYTES` arrived, well inside the server's window.
 */
export class Acknowledger {
  private total = 0;
  private acknowledged = 0;

  private readonly send: (text: string) => void;
  constructor(send: (text: string) => void) {
    this.send = send;
  }

  received(text: string): void {
    this.total += utf8Length(text);
    if (this.total - this.acknowledged < WATCH_ACK_EVERY_BYTES) return;
    this.acknowledged = this.total;
    this.send(JSON.stringify({ type: "ack", bytes: this.total }));
  }
}
