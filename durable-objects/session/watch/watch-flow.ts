import { WATCH_ACK_EVERY_BYTES, WATCH_MAX_SOCKET_AGE_MS, WATCH_MESSAGE_BURST, WATCH_MESSAGES_PER_SECOND, WATCH_UNACKED_WINDOW_BYTES } from "../../../schema/watch.ts";

/**
 * An acknowledgement that moves the window on by at least this much (or up to everything sent) is
 * not counted against the message rate: the protocol asks for one every WATCH_ACK_EVERY_BYTES, so
 * a reader faster than the rate times that step would otherwise be closed for doing as told.
 */
const FREE_ACK_STEP_BYTES = WATCH_ACK_EVERY_BYTES / 2;

/** What a watch socket follows: one lane's stream, or the session-wide stream. */
export type WatchTarget = { kind: "lane"; lane: string } | { kind: "session" };

/**
 * Per-socket state, kept with the socket through hibernation (ids and counters, far below the
 * 2 KiB the platform documents). `ready` turns true once the first snapshot was sent: a socket
 * found unready after a restart never got its baseline and is closed so that its client
 * reconnects. `sent` and `acked` are the flow-control byte counters (schema/watch.ts): they must
 * survive hibernation, or a paused reader could get a fresh window after every idle period.
 */
export interface WatchAttachment {
  v: 2;
  target: WatchTarget;
  keyId: string;
  ready: boolean;
  openedAt: number;
  sent: number;
  acked: number;
  /** The client asked for `batch` frames (`?batch=true`); absent in attachments of older sockets. */
  batch?: true;
  /**
   * The socket may send commands (spec "Commands on the lane socket": a key, or a browser token
   * with the `prompt` scope, on a lane stream): the hash its key is verified by when the session
   * takes a request-quota lease for its commands (socket-commands.ts).
   */
  commandsKeyHash?: string;
  /**
   * A relay that passes Server-Sent Events through (the front worker's `GET …/events`): the object
   * sends each message already in SSE form, as bytes, once for all such sockets (watch-hub.ts).
   */
  sse?: true;
  /** Opened with a browser token: when it expires (ms since the epoch); nothing is sent after it. */
  tokenExpiresAt?: number;
}

export type SendVerdict = "send" | "slow" | "expired" | "token_expired";
export type AckVerdict = "ok" | "beyond_sent";

/**
 * The flow control of one socket: byte counters mirrored into its attachment, its age, and the
 * rate of its client messages. The message bucket lives in memory only: the object hibernates
 * only after about 10 s without events, and the bucket refills completely in that time, so a
 * restart never grants more than a bucket that would have refilled anyway.
 */
export class WatchFlow {
  private tokens = WATCH_MESSAGE_BURST;
  private refilledAt: number;

  private constructor(
    private readonly ws: WebSocket,
    private readonly state: WatchAttachment,
    now: number,
  ) {
    this.refilledAt = now;
  }

  /** A new socket: writes its first attachment. */
  static open(ws: WebSocket, target: WatchTarget, keyId: string, now: number, options: { batch?: boolean; commandsKeyHash?: string | undefined; sse?: boolean; tokenExpiresAt?: number | undefined } = {}): WatchFlow {
    const { batch = false, commandsKeyHash, sse = false, tokenExpiresAt } = options;
    const flow = new WatchFlow(
      ws,
      {
        v: 2,
        target,
        keyId,
        ready: false,
        openedAt: now,
        sent: 0,
        acked: 0,
        ...(batch && { batch: true }),
        ...(commandsKeyHash !== undefined && { commandsKeyHash }),
        ...(sse && { sse: true }),
        ...(tokenExpiresAt !== undefined && { tokenExpiresAt }),
      },
      now,
    );
    flow.persist();
    return flow;
  }

  /** A socket closed for good: its attachment no longer restores a flow (readAttachment answers undefined). */
  static retire(ws: WebSocket): void {
    try {
      ws.serializeAttachment(null);
    } catch {
      // Already gone: nothing can restore it either.
    }
  }

  /** A socket of an earlier instance (or accepted elsewhere in this one), from its attachment. */
  static restore(ws: WebSocket, now: number): WatchFlow | undefined {
    const attachment = readAttachment(ws);
    return attachment ? new WatchFlow(ws, attachment, now) : undefined;
  }

  get target(): WatchTarget {
    return this.state.target;
  }

  get keyId(): string {
    return this.state.keyId;
  }

  /** The key hash a commanding socket's commands are authorized by; undefined when it may send none. */
  get commandsKeyHash(): string | undefined {
    return this.state.commandsKeyHash;
  }

  get ready(): boolean {
    return this.state.ready;
  }

  /** Whether several events due at once go out as one `batch` frame. */
  get batch(): boolean {
    return this.state.batch === true;
  }

  /** Whether messages go out in Server-Sent Events form (a passing-through relay). */
  get sse(): boolean {
    return this.state.sse === true;
  }

  /** Opened with a browser token that has expired by `now`. */
  tokenExpired(now: number): boolean {
    return this.state.tokenExpiresAt !== undefined && now >= this.state.tokenExpiresAt;
  }

  markReady(): void {
    this.state.ready = true;
    this.persist();
  }

  /** Whether the next message of `bytes` may go out; "slow" and "expired" close the socket instead. */
  beforeSend(now: number): SendVerdict {
    if (this.tokenExpired(now)) return "token_expired";
    if (now - this.state.openedAt > WATCH_MAX_SOCKET_AGE_MS) return "expired";
    // Checked before the send: a socket holds at most the window plus one message.
    if (this.state.sent - this.state.acked > WATCH_UNACKED_WINDOW_BYTES) return "slow";
    return "send";
  }

  sent(bytes: number): void {
    this.state.sent += bytes;
    this.persist();
  }

  /** An acknowledgement: monotone (a smaller one changes nothing) and never beyond what was sent. */
  acknowledge(bytes: number): AckVerdict {
    if (bytes > this.state.sent) return "beyond_sent";
    if (bytes <= this.state.acked) return "ok";
    this.state.acked = bytes;
    this.persist();
    return "ok";
  }

  /**
   * Takes one client message from the bucket; false when the socket exceeds its message rate.
   * `ack`: the message is the acknowledgement of that many bytes. One that advances the
   * acknowledged count by FREE_ACK_STEP_BYTES, or to everything sent, takes nothing: such
   * acknowledgements are bounded by the bytes the server sent, not by the client (each moves the
   * count on, which never passes `sent`). A repeated, smaller or tiny one counts like any message.
   */
  admitMessage(now: number, ack?: number): boolean {
    if (ack !== undefined && this.advancesWindow(ack)) return true;
    const refill = ((now - this.refilledAt) / 1000) * WATCH_MESSAGES_PER_SECOND;
    this.tokens = Math.min(WATCH_MESSAGE_BURST, this.tokens + refill);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Whether acknowledging `bytes` moves the window on by a step, or to everything sent (and not beyond it). */
  private advancesWindow(bytes: number): boolean {
    const { sent, acked } = this.state;
    return bytes > acked && bytes <= sent && (bytes - acked >= FREE_ACK_STEP_BYTES || bytes === sent);
  }

  /** An in-memory write kept with the socket (no storage): cheap enough for every send. */
  private persist(): void {
    this.ws.serializeAttachment(this.state);
  }
}

export function readAttachment(ws: WebSocket): WatchAttachment | undefined {
  let value: unknown;
  try {
    value = ws.deserializeAttachment();
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || !("v" in value) || value.v !== 2) return undefined;
  if (!("target" in value) || !("ready" in value) || !("keyId" in value)) return undefined;
  if (!("openedAt" in value) || !("sent" in value) || !("acked" in value)) return undefined;
  const { ready, keyId, openedAt, sent, acked } = value;
  if (typeof ready !== "boolean" || typeof keyId !== "string") return undefined;
  if (!isCount(openedAt) || !isCount(sent) || !isCount(acked)) return undefined;
  const target = readTarget(value.target);
  const batch = "batch" in value && value.batch === true;
  const commandsKeyHash = "commandsKeyHash" in value && typeof value.commandsKeyHash === "string" ? value.commandsKeyHash : undefined;
  const sse = "sse" in value && value.sse === true;
  const tokenExpiresAt = "tokenExpiresAt" in value && isCount(value.tokenExpiresAt) ? value.tokenExpiresAt : undefined;
  return (
    target && {
      v: 2,
      target,
      keyId,
      ready,
      openedAt,
      sent,
      acked,
      ...(batch && { batch: true }),
      ...(commandsKeyHash !== undefined && { commandsKeyHash }),
      ...(sse && { sse: true }),
      ...(tokenExpiresAt !== undefined && { tokenExpiresAt }),
    }
  );
}

function readTarget(target: unknown): WatchTarget | undefined {
  if (typeof target !== "object" || target === null || !("kind" in target)) return undefined;
  if (target.kind === "session") return { kind: "session" };
  if (target.kind === "lane" && "lane" in target && typeof target.lane === "string") return { kind: "lane", lane: target.lane };
  return undefined;
}

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
