import type { Entry } from "../schema/entries.ts";
import type { HarnessEvent, LaneSnapshot } from "../schema/lane.ts";
import { isRebase, reduceLaneSnapshot } from "../schema/reduce-lane-snapshot.ts";
import { WATCH_CLOSE, type LaneWatchMessage } from "../schema/watch.ts";
import type { ErrorCode } from "../schema/errors.ts";
import { ApiRequestError, HttpClient, type FetchLike } from "./http.ts";
import { LanesApi } from "./lanes.ts";
import { BranchesApi } from "./session-data.ts";
import { Acknowledger, laneWatchUrl, bearerProtocol, parseWatchFrame, type WatchSocket, type WatchSocketConstructor } from "./watch-socket.ts";
import { PendingCommands, type LaneCommands } from "./watch-commands.ts";
import { MessagePacer } from "./watch-pacer.ts";
import type { AbortOutcome, AcceptedOperationSchema } from "../schema/lane-answers.ts";
import type { InferOutput } from "valibot";

export { bearerProtocol, laneWatchUrl, type WatchSocket, type WatchSocketConstructor } from "./watch-socket.ts";

// watchLane (ARCHITECTURE D13, spec/API.md "Watch protocol"): a lane's live replica. One socket at
// a time to `…/sessions/{sid}/lanes/{lane}/watch`, authenticated with the `bearer.<key>`
// subprotocol (browsers cannot set headers on an upgrade). The server sends a snapshot, then
// events; the replica folds them with the shared `reduceLaneSnapshot`. A rebase (`navigation_end`)
// or a seq inconsistency sends `{"type":"resnapshot"}`; a closed or failed socket is replaced after
// a jittered, capped exponential backoff, and its fresh snapshot replaces the replica.
//
// A refused upgrade (unknown session or lane, a refused key) cannot be told from a network failure
// through the WebSocket API, which hides the upgrade's status. So a connection that fails before
// it opens is classified with one REST read of the lane (`GET …/lanes/{lane}`, same key): an answer
// that a retry cannot change (400, 401, 403, 404) ends the watch with the API's error code; anything
// else (a network failure, 429, 5xx, or the lane answering fine) is retried after the backoff.
//
// Seq rule (docs/api-watch.md "Seq"): seqs are the session's event counter, strictly increasing on
// a socket, and a lane stream legitimately skips the numbers of events it does not carry (other
// lanes' events, turn events, …). So a forward jump is not a gap; the server never drops an event
// from an open socket (it closes the socket instead, and reconnecting gives a fresh snapshot). The
// default rule `"monotonic"` therefore treats only a seq that does not increase (≤ the last seq
// seen on this socket, the snapshot's included) as a gap. `"contiguous"` (seq must be last + 1) is
// for a stream that numbers its own events consecutively (e.g. a relay that renumbers); against
// this server it would resnapshot after nearly every run.
//
// Flow control (docs/api-watch.md "Acknowledgements"): the replica acknowledges the bytes it has
// received every megabyte, so the server never closes it as a slow consumer while it keeps up.
// Its other messages (commands, pings, resnapshot requests) are paced under the server's message
// rate (watch-pacer.ts), so a burst of commands is sent in time instead of closing the socket.
//
// A browser token expires within the hour: `key` may be a function, asked for the credential
// before every connection, so the watch renews it itself. With one, a close 1008 (the token
// expired, or the key was revoked) reconnects with a fresh credential; a refused one ends the
// watch as above.
// A long transcript arrives as its newest part (`snapshot.olderEntries`); `olderEntries()` reads
// the rest by REST.

export type GapRule = "monotonic" | "contiguous";

export interface BackoffOptions {
  /** First reconnect delay before jitter (default 500 ms); doubles per consecutive failure. */
  initialMs?: number;
  /** Cap of the delay (default 30 s). */
  maxMs?: number;
  /** Consecutive failed connections (no snapshot received) before giving up; default unlimited. */
  maxAttempts?: number;
}

export type SnapshotReason = "connect" | "resnapshot";
export type ResnapshotReason = "rebase" | "seq_gap";
export type WatchStatus = "connecting" | "open" | "reconnecting" | "closed";

/** Everything a watcher observes, in order. */
export type LaneWatchUpdate =
  | { type: "snapshot"; seq: number; snapshot: LaneSnapshot; reason: SnapshotReason }
  /** An event folded into the replica; `snapshot` is the replica after it. */
  | { type: "event"; seq: number; event: HarnessEvent; snapshot: LaneSnapshot }
  /** A resnapshot was requested; events are ignored until the fresh snapshot arrives. `event` is the one that caused it. */
  | { type: "resnapshot"; reason: ResnapshotReason; seq: number; event: HarnessEvent }
  | { type: "status"; status: WatchStatus; attempt?: number; delayMs?: number; code?: number; reason?: string };

export type LaneWatchListener = (update: LaneWatchUpdate) => void;

export class WatchError extends Error {
  override readonly name = "WatchError";
  /** socket: the socket reported an error or could not be created; key: the `key` function failed (retried); protocol: an unreadable message; listener: a callback threw; ended: the watch stopped for good. */
  readonly kind: "socket" | "key" | "protocol" | "listener" | "ended";
  override readonly cause?: unknown;
  /** The API's error code when the server refused the watch (`SessionNotFound`, `UnknownLane`, `Unauthenticated`, …). */
  readonly code?: ErrorCode;
  /** The HTTP status of that refusal. */
  readonly status?: number;

  // Fields assigned in the body, not as parameter properties: Node runs the SDK's sources with
  // type stripping only, which has no parameter properties (client/README.md "Install").
  constructor(kind: WatchError["kind"], message: string, cause?: unknown) {
    super(message);
    this.kind = kind;
    this.cause = cause;
    if (cause instanceof ApiRequestError) {
      this.code = cause.code;
      this.status = cause.status;
    }
  }
}

export interface WatchLaneOptions {
  /** The API's base URL (`https://…` or `http://…`; `wss://`/`ws://` are derived). */
  baseUrl: string;
  /**
   * The tenant key (or a browser token with the `watch` scope), offered as the `bearer.<key>`
   * subprotocol; or a function answering it, asked before every connection (a page's way to renew
   * its browser token: the server closes a socket whose token expired, and the watch reconnects
   * with the one the function answers then). `olderEntries()` and the refusal read use the last one.
   */
  key: string | (() => string | Promise<string>);
  sessionId: string;
  lane: string;
  /** The WebSocket implementation (default `globalThis.WebSocket`). */
  WebSocket?: WatchSocketConstructor;
  onSnapshot?: (snapshot: LaneSnapshot, info: { seq: number; reason: SnapshotReason }) => void;
  onEvent?: (event: HarnessEvent, snapshot: LaneSnapshot, seq: number) => void;
  onError?: (error: WatchError) => void;
  backoff?: BackoffOptions;
  /** How a seq gap is detected (see the module comment); default `"monotonic"`. */
  gapRule?: GapRule;
  /** Sends the text `ping` this often while open (answered `pong` without waking the object); 0 disables. Default 30 s. */
  pingIntervalMs?: number;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
  /** The fetch `olderEntries()` reads with, and the one REST read that classifies a refused connection (default `globalThis.fetch`). */
  fetch?: FetchLike;
}

export interface OlderEntriesOptions {
  /** Entries per REST page (default 100, at most 1000). */
  pageSize?: number;
  signal?: AbortSignal;
}

export interface LaneWatch extends LaneCommands {
  /** The current replica: the last snapshot with every later event folded in; undefined before the first. */
  snapshot(): LaneSnapshot | undefined;
  /** The seq the replica reflects. */
  seq(): number | undefined;
  status(): WatchStatus;
  /** The first snapshot; rejects with WatchError if the watch ends before one arrives. */
  readonly ready: Promise<LaneSnapshot>;
  /** Adds a listener; returns its removal. */
  on(listener: LaneWatchListener): () => void;
  /**
   * The transcript entries before the replica's `transcript`, newest first, back to the newest
   * compaction (included), read by REST a page at a time; none when the transcript is complete
   * (no `olderEntries` on the replica). A snapshot carries only the newest part of a long transcript.
   */
  olderEntries(options?: OlderEntriesOptions): AsyncGenerator<Entry, void, undefined>;
  /** Closes the socket and stops reconnecting. */
  close(): void;
}

const RESNAPSHOT = JSON.stringify({ type: "resnapshot" });
const OPEN = 1;
/**
 * Closes after which reconnecting cannot succeed: 1000 the session was deleted; 1003 and 1008 the
 * server refused this client (its key was revoked, or a protocol violation).
 */
const SERVER_DONE: ReadonlySet<number> = new Set([WATCH_CLOSE.sessionDeleted, WATCH_CLOSE.binary, WATCH_CLOSE.policy]);
/** REST answers that a retry cannot change: bad ids, no or a refused key, no such session or lane. */
const REFUSED_FOR_GOOD: ReadonlySet<number> = new Set([400, 401, 403, 404]);
/** How long the read that classifies a refused connection may take before the attempt is just retried. */
const REFUSAL_READ_TIMEOUT_MS = 10_000;

interface Connection {
  socket: WatchSocket;
  /** Events are ignored until the next snapshot: before the first one, or while a resnapshot is pending. */
  awaitingSnapshot: boolean;
  hadSnapshot: boolean;
  /** The last seq accepted on this socket (the snapshot's included). */
  lastSeq: number;
  ping?: ReturnType<typeof setInterval>;
  acks: Acknowledger;
  /** Every client message but acknowledgements (which the server does not count) goes through it. */
  pacer: MessagePacer;
  /** The socket opened: an error after this is reported; one before it is a failed attempt. */
  opened: boolean;
}

export function watchLane(options: WatchLaneOptions): LaneWatch {
  const Socket = options.WebSocket ?? globalThis.WebSocket;
  if (typeof Socket !== "function") throw new TypeError("No WebSocket implementation: pass options.WebSocket");
  // Batch frames: the events due together (a run's start, a settlement) arrive in one frame.
  const url = `${laneWatchUrl(options.baseUrl, options.sessionId, options.lane)}?batch=true`;
  const keyOf = options.key;
  /** The credential of the latest connection (the REST reads use it). */
  let currentKey = typeof keyOf === "string" ? keyOf : undefined;
  const initialMs = Math.max(1, options.backoff?.initialMs ?? 500);
  const maxMs = Math.max(initialMs, options.backoff?.maxMs ?? 30_000);
  const maxAttempts = options.backoff?.maxAttempts ?? Number.POSITIVE_INFINITY;
  const gapRule = options.gapRule ?? "monotonic";
  const pingIntervalMs = options.pingIntervalMs ?? 30_000;
  const random = options.random ?? Math.random;
  const listeners = new Set<LaneWatchListener>();
  const commands = new PendingCommands((frame) => {
    if (active?.hadSnapshot) send(active, frame);
  });

  let replica: { seq: number; snapshot: LaneSnapshot } | undefined;
  let active: Connection | undefined;
  let status: WatchStatus = "connecting";
  let ended = false;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let settleReady: { resolve: (snapshot: LaneSnapshot) => void; reject: (error: WatchError) => void } | undefined;
  const ready = new Promise<LaneSnapshot>((resolve, reject) => {
    settleReady = { resolve, reject };
  });
  // A watch that ends before its first snapshot must not surface as an unhandled rejection.
  ready.catch(() => undefined);

  const report = (error: WatchError): void => {
    try {
      options.onError?.(error);
    } catch {
      // An error handler that throws has nowhere left to report to.
    }
  };
  const guarded = (call: () => void): void => {
    try {
      call();
    } catch (error) {
      report(new WatchError("listener", "A watch listener threw", error));
    }
  };
  const emit = (update: LaneWatchUpdate): void => {
    for (const listener of [...listeners]) guarded(() => listener(update));
  };
  const setStatus = (next: WatchStatus, extra: { attempt?: number; delayMs?: number; code?: number; reason?: string } = {}): void => {
    status = next;
    emit({ type: "status", status: next, ...extra });
  };

  function end(error: WatchError | undefined, close?: { code: number; reason: string }): void {
    if (ended) return;
    ended = true;
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const connection = active;
    active = undefined;
    if (connection) dispose(connection, 1000, "client closed");
    if (error) report(error);
    commands.failAll(error ?? new WatchError("ended", "The watch was closed before the command was answered"));
    settleReady?.reject(error ?? new WatchError("ended", "The watch was closed before its first snapshot"));
    settleReady = undefined;
    setStatus("closed", close ?? {});
  }

  function dispose(connection: Connection, code: number, reason: string): void {
    if (connection.ping !== undefined) clearInterval(connection.ping);
    connection.ping = undefined;
    connection.pacer.dispose();
    try {
      if (connection.socket.readyState < 2) connection.socket.close(code, reason);
    } catch {
      // Already closing.
    }
  }

  function connect(): void {
    timer = undefined;
    if (ended) return;
    setStatus("connecting");
    if (typeof keyOf === "string") return open(keyOf);
    void Promise.resolve()
      .then(keyOf)
      .then(
        (key) => {
          if (ended) return;
          currentKey = key;
          open(key);
        },
        (error: unknown) => {
          if (ended) return;
          report(new WatchError("key", "The key function failed", error));
          retry({ code: 1006, reason: "no key" });
        },
      );
  }

  function open(key: string): void {
    let socket: WatchSocket;
    try {
      socket = new Socket(url, [bearerProtocol(key)]);
    } catch (error) {
      // A URL or protocol the implementation refuses will not work on a retry either.
      end(new WatchError("ended", "The WebSocket could not be created", error));
      return;
    }
    const connection: Connection = {
      socket,
      awaitingSnapshot: true,
      hadSnapshot: false,
      lastSeq: Number.NEGATIVE_INFINITY,
      acks: new Acknowledger((ack) => transmit(connection, ack)),
      pacer: new MessagePacer((text) => transmit(connection, text)),
      opened: false,
    };
    active = connection;
    socket.addEventListener("open", () => {
      if (active !== connection) return;
      connection.opened = true;
      setStatus("open");
      // A ping only keeps the socket alive: none is needed while paced messages wait to go out.
      if (pingIntervalMs > 0) connection.ping = setInterval(() => connection.pacer.backlog === 0 && send(connection, "ping"), pingIntervalMs);
    });
    socket.addEventListener("message", (event) => {
      if (active === connection) receive(connection, event.data);
    });
    socket.addEventListener("error", (event) => {
      if (active !== connection) return;
      report(new WatchError("socket", "The watch socket reported an error", event));
      // A refused upgrade (401, 404, …) may end with an error and no close event (Node 22's
      // built-in WebSocket): without this the attempt would wait for a close that never comes.
      // Its late close, if any, finds another connection active and is ignored.
      if (!connection.opened) {
        active = undefined;
        dispose(connection, 1000, "connection failed");
        failedBeforeOpen({ code: 1006, reason: "connection failed" });
      }
    });
    socket.addEventListener("close", (event) => {
      if (active !== connection) return;
      active = undefined;
      if (connection.ping !== undefined) clearInterval(connection.ping);
      connection.pacer.dispose();
      // With a key function, a policy close may be an expired token: the next connection asks for a fresh one.
      const renewable = typeof keyOf === "function" && event.code === WATCH_CLOSE.policy;
      if (SERVER_DONE.has(event.code) && !renewable) {
        end(new WatchError("ended", `The server ended the watch: ${event.reason || "normal closure"}`), { code: event.code, reason: event.reason });
        return;
      }
      const close = { code: event.code, reason: event.reason };
      if (connection.opened) retry(close);
      else failedBeforeOpen(close);
    });
  }

  let rest: { key: string | undefined; http: HttpClient; lanes: LanesApi; branches: BranchesApi } | undefined;
  /** The REST client of the current credential (made again when a key function renewed it). */
  const restClient = () => {
    if (rest === undefined || rest.key !== currentKey) {
      const http = new HttpClient({ baseUrl: options.baseUrl, ...(currentKey !== undefined && { key: currentKey }), ...(options.fetch && { fetch: options.fetch }) });
      rest = { key: currentKey, http, lanes: new LanesApi(http), branches: new BranchesApi(http) };
    }
    return rest;
  };

  /** The REST refusal behind a connection that never opened, when a retry cannot change it. */
  async function refusal(): Promise<ApiRequestError | undefined> {
    try {
      await restClient().lanes.get(options.sessionId, options.lane, { signal: AbortSignal.timeout(REFUSAL_READ_TIMEOUT_MS) });
      return undefined;
    } catch (error) {
      return error instanceof ApiRequestError && REFUSED_FOR_GOOD.has(error.status) ? error : undefined;
    }
  }

  /** A connection that failed before it opened: ends the watch on a lasting refusal, else retries. */
  function failedBeforeOpen(close: { code: number; reason: string }): void {
    if (ended) return;
    void refusal().then((refused) => {
      if (ended) return;
      if (refused === undefined) return retry(close);
      end(new WatchError("ended", `The server refused the watch: ${refused.code} (${refused.status}): ${refused.message}`, refused), close);
    });
  }

  /** Replaces a lost connection after the backoff; a snapshot since the last failure resets it. */
  function retry(close: { code: number; reason: string }): void {
    if (ended) return;
    failures += 1;
    if (failures > maxAttempts) {
      end(new WatchError("ended", `Gave up after ${maxAttempts} failed connection attempts`), close);
      return;
    }
    const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 30));
    // Equal jitter: at least half the step, so a crowd of clients spreads without reconnecting at once.
    const delayMs = Math.round(ceiling / 2 + random() * (ceiling / 2));
    setStatus("reconnecting", { attempt: failures, delayMs, ...close });
    timer = setTimeout(connect, delayMs);
  }

  /** Drops a connection that can no longer be trusted and reconnects. */
  function drop(connection: Connection, reason: string): void {
    if (active !== connection) return;
    active = undefined;
    dispose(connection, 4000, reason);
    retry({ code: 4000, reason });
  }

  /** A client message, paced under the server's message rate. */
  function send(connection: Connection, text: string): void {
    if (connection.socket.readyState === OPEN) connection.pacer.send(text);
  }

  /** Puts a message on the socket now. */
  function transmit(connection: Connection, text: string): void {
    if (connection.socket.readyState !== OPEN) return;
    try {
      connection.socket.send(text);
    } catch (error) {
      report(new WatchError("socket", "Sending on the watch socket failed", error));
      drop(connection, "send failed");
    }
  }

  function resnapshot(connection: Connection, reason: ResnapshotReason, seq: number, event: HarnessEvent): void {
    connection.awaitingSnapshot = true;
    emit({ type: "resnapshot", reason, seq, event });
    send(connection, RESNAPSHOT);
  }

  function receive(connection: Connection, data: unknown): void {
    const text = typeof data === "string" ? data : data instanceof ArrayBuffer ? new TextDecoder().decode(data) : undefined;
    if (text === "pong") return;
    if (text !== undefined) connection.acks.received(text);
    // A command's reply (counted by flow control like every message).
    if (text !== undefined && commands.reply(text)) return;
    const messages = text === undefined ? undefined : parseWatchFrame(text);
    if (messages === undefined) {
      report(new WatchError("protocol", `Unreadable watch message: ${String(text ?? typeof data).slice(0, 120)}`));
      return;
    }
    // A message may replace the connection (a resnapshot request that failed to send drops it).
    for (const message of messages) if (active === connection) apply(connection, message);
  }

  function apply(connection: Connection, message: LaneWatchMessage): void {
    if (message.type === "snapshot") {
      const reason: SnapshotReason = connection.hadSnapshot ? "resnapshot" : "connect";
      // A new socket sends the commands still unanswered (again, with their ids: never done twice).
      if (!connection.hadSnapshot) for (const frame of commands.unanswered()) send(connection, frame);
      connection.hadSnapshot = true;
      connection.awaitingSnapshot = false;
      connection.lastSeq = message.seq;
      replica = { seq: message.seq, snapshot: message.snapshot };
      failures = 0;
      settleReady?.resolve(message.snapshot);
      settleReady = undefined;
      emit({ type: "snapshot", seq: message.seq, snapshot: message.snapshot, reason });
      if (options.onSnapshot) guarded(() => options.onSnapshot?.(message.snapshot, { seq: message.seq, reason }));
      return;
    }
    // Before the first snapshot, or while a resnapshot is pending: the coming snapshot covers it.
    if (connection.awaitingSnapshot || replica === undefined) return;
    const gap = gapRule === "contiguous" ? message.seq !== connection.lastSeq + 1 : message.seq <= connection.lastSeq;
    if (gap) return resnapshot(connection, "seq_gap", message.seq, message.event);
    connection.lastSeq = message.seq;
    const folded = reduceLaneSnapshot(replica.snapshot, message.event);
    if (isRebase(folded)) return resnapshot(connection, "rebase", message.seq, message.event);
    replica = { seq: message.seq, snapshot: folded };
    emit({ type: "event", seq: message.seq, event: message.event, snapshot: folded });
    if (options.onEvent) guarded(() => options.onEvent?.(message.event, folded, message.seq));
  }

  async function* olderEntries(start: string | undefined, { pageSize = 100, signal }: OlderEntriesOptions): AsyncGenerator<Entry, void, undefined> {
    if (start === undefined) return;
    const { branches } = restClient();
    const query = { start, stopAtType: "compaction" as const, limit: pageSize };
    yield* branches.allEntries(options.sessionId, options.lane, query, signal ? { signal } : {});
  }

  /** Sends a command now on a socket that has its snapshot, else with the next one's. */
  function command<T>(fields: Record<string, unknown> & { id?: string | undefined }): Promise<T> {
    if (ended) return Promise.reject(new WatchError("ended", "The watch is closed"));
    const { frame, answer } = commands.add<T>(fields);
    if (frame !== undefined && active?.hadSnapshot) send(active, frame);
    return answer;
  }

  connect();

  return {
    prompt: (prompt, promptOptions = {}) => command<InferOutput<typeof AcceptedOperationSchema>>({ type: "prompt", prompt, ...promptOptions }),
    steer: (message, commandOptions = {}) => command<{ entryId: string }>({ type: "queue", kind: "steer", message, ...commandOptions }),
    followUp: (message, commandOptions = {}) => command<{ entryId: string }>({ type: "queue", kind: "followUp", message, ...commandOptions }),
    abort: (commandOptions = {}) => command<AbortOutcome>({ type: "abort", ...commandOptions }),
    snapshot: () => replica?.snapshot,
    seq: () => replica?.seq,
    status: () => status,
    ready,
    on(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    // The start is read at the call: later snapshots do not move an iteration already begun.
    olderEntries: (olderOptions = {}) => olderEntries(replica?.snapshot.olderEntries?.start, olderOptions),
    close: () => end(undefined),
  };
}
