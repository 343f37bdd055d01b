import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import { utf8Length } from "../../schema/utf8.ts";
import { formatStreamId } from "../../schema/watch-resume.ts";
import { WATCH_ACK_EVERY_BYTES } from "../../schema/watch.ts";

const encoder = new TextEncoder();

/** The headers of every Server-Sent Events answer. */
export const SSE_HEADERS = { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache" } as const;

/** What the relay reads of each frame the session object sends (schema/watch.ts, watch-resume.ts). */
export interface RelayFrame {
  type?: unknown;
  epoch?: unknown;
  seq?: unknown;
  snapshot?: LaneSnapshot;
  event?: HarnessEvent;
  messages?: RelayFrame[];
}
type Frame = RelayFrame;

export interface RelayOptions {
  /** The `: ping` comment's spacing. */
  heartbeatMs: number;
  /** Relay the socket's snapshots (default true); a streamed prompt sends its run's events only. */
  snapshots?: boolean;
  /** Which lane events to relay (default: all). */
  events?: (event: { type?: unknown; runId?: unknown }) => boolean;
  /**
   * The stream's last words (SSE text): once it resolves, they are written and the stream ends
   * (the socket is closed), instead of lasting until the client or the object closes it.
   */
  finish?: Promise<string>;
  /**
   * Writes a relayed frame its own way (another protocol over the same relay: the AI SDK's
   * stream, worker/routes/ai-sdk.ts); default: the watch protocol's `snapshot` and `event` events.
   */
  render?: (frame: RelayFrame) => string;
  /** What the stream says when the object closes the socket; default: an `error` event with its code and reason. */
  closing?: (code: number, reason: string) => string;
}

/**
 * A lane watch socket (opened by the front worker as a relay, worker/watch/watch-upgrade.ts) as a
 * Server-Sent Events body (docs/api-watch.md "Streaming over HTTP (SSE)"): the socket's `snapshot`
 * and `event` messages become `snapshot` and `event` SSE events whose data is the message itself
 * and whose id is `<epoch>.<seq>`. The session object holds only the hibernatable socket; this
 * worker holds the HTTP response, so open streams never keep the object awake.
 *
 * Flow control is the socket's own (schema/watch.ts): the relay acknowledges only what the HTTP
 * reader has room for, so a reader that stops reading leaves its bytes unacknowledged and the
 * object closes the socket as a slow consumer, which ends the stream. Any close by the object
 * (revocation, deletion, slow consumer, age) ends the stream after an `error` event naming it.
 */
export function sseRelay(ws: WebSocket, options: RelayOptions): ReadableStream<Uint8Array> {
  let epoch = "";
  let received = 0;
  let acknowledged = 0;
  let ended = false;
  // The body is the platform's own byte pipe: a write is handed to the HTTP response without
  // entering this isolate again for each chunk (a JS ReadableStream is pulled through JS).
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  /** Bytes written that the HTTP reader has not taken yet. */
  let unread = 0;

  // The HTTP client went away: the socket goes too (the object forgets it at its close).
  const cancelled = () => {
    if (ended) return;
    ended = true;
    clearInterval(heartbeat);
    tryClose(ws, 1000, "The event stream was closed");
  };
  const writeBytes = (bytes: Uint8Array) => {
    if (ended || bytes.byteLength === 0) return;
    unread += bytes.byteLength;
    writer.write(bytes).then(() => {
      unread -= bytes.byteLength;
      acknowledge();
    }, cancelled);
  };
  const write = (text: string) => writeBytes(encoder.encode(text));
  // Room for one acknowledgement's worth of bytes: beyond it the reader is behind, and nothing more is acknowledged.
  const acknowledge = () => {
    if (ended || unread >= WATCH_ACK_EVERY_BYTES || received - acknowledged < WATCH_ACK_EVERY_BYTES) return;
    acknowledged = received;
    trySend(ws, JSON.stringify({ type: "ack", bytes: received }));
  };
  const finishBody = () => {
    ended = true;
    clearInterval(heartbeat);
    writer.close().catch(() => undefined);
  };
  const end = (code: number, reason: string) => {
    if (ended) return;
    write(options.closing ? options.closing(code, reason) : `event: error\ndata: ${JSON.stringify({ code, reason })}\n\n`);
    finishBody();
  };
  const heartbeat: ReturnType<typeof setInterval> = setInterval(() => write(": ping\n\n"), options.heartbeatMs);
  writer.closed.catch(cancelled);

  const relayed = (frame: Frame): boolean =>
    frame.type === "snapshot" ? options.snapshots !== false : frame.event === undefined || (options.events?.(frame.event) ?? true);
  options.finish?.then(
    (last) => {
      write(last);
      if (ended) return;
      finishBody();
      tryClose(ws, 1000, "The stream is complete");
    },
    () => end(1011, "The stream's answer failed"),
  );

  // Binary messages (the object's own SSE bytes) as ArrayBuffers, handled synchronously in order.
  ws.binaryType = "arraybuffer";
  ws.accept();
  const relay = (frame: Frame, text: string): string => {
    if (frame.type === "epoch" && typeof frame.epoch === "string") epoch = frame.epoch;
    if ((frame.type !== "snapshot" && frame.type !== "event") || typeof frame.seq !== "number" || !relayed(frame)) return "";
    if (options.render) return options.render(frame);
    // A navigation rebases the lane (the fold cannot follow it): ask for the fresh snapshot a
    // socket client would ask for; it arrives as the next `snapshot` event.
    if (frame.event?.type === "navigation_end") trySend(ws, JSON.stringify({ type: "resnapshot" }));
    return `event: ${frame.type}\nid: ${formatStreamId({ epoch, seq: frame.seq })}\ndata: ${text}\n\n`;
  };
  ws.addEventListener("message", ({ data }) => {
    // Server-Sent Events the object already wrote (a passing-through relay, `sse` in
    // watch-upgrade.ts): written to the stream as they are, with no parsing here.
    if (data instanceof ArrayBuffer) {
      received += data.byteLength;
      writeBytes(new Uint8Array(data));
      acknowledge();
      return;
    }
    if (typeof data !== "string" || data === "pong") return;
    received += utf8Length(data);
    const frame = parseFrame(data);
    // A batch frame (events due together, one socket message) becomes its events, written at once.
    if (frame?.type === "batch" && Array.isArray(frame.messages)) write(frame.messages.map((message) => relay(message, JSON.stringify(message))).join(""));
    else if (frame) write(relay(frame, data));
    acknowledge();
  });
  ws.addEventListener("close", ({ code, reason }) => {
    end(code, reason);
    // Complete the closing handshake; reserved codes have no peer to answer.
    if (code !== 1005 && code !== 1006 && code !== 1015) tryClose(ws, code, reason);
  });
  ws.addEventListener("error", () => {
    end(1011, "The watch socket failed");
    tryClose(ws, 1011, "Relay failed");
  });

  return pipe.readable;
}

function parseFrame(text: string): Frame | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function trySend(ws: WebSocket, text: string): void {
  try {
    ws.send(text);
  } catch {
    // Closing: the close event ends the stream.
  }
}

function tryClose(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed.
  }
}
