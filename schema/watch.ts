import * as v from "valibot";
import { EnqueueSchema, IfBusySchema, ImagesSchema, OperationIdSchema, PromptInputSchema } from "./lane-api.ts";
import type { HarnessEvent, LaneInfo, LaneSnapshot } from "./lane.ts";
import { DeferredModeSchema } from "./settings.ts";
import type { SessionStats } from "./usage.ts";

// The watch protocol (spec/API.md "Watch protocol", ARCHITECTURE D13, D14.13): what a lane or
// session watcher receives over its WebSocket, which events each stream carries, and the client
// messages the server accepts.

/** The session-wide baseline (D14.13): lane inventory, fault and session stats. */
export interface SessionSnapshot {
  lanes: LaneInfo[];
  faulted: boolean;
  stats: SessionStats;
}

/**
 * Server → client. `seq` is the session's event counter: every event bound on the session's line
 * takes the next number, so seqs strictly increase on every socket; a stream skips the numbers of
 * events it does not carry. A snapshot's seq is the counter at its capture: exactly the events
 * with larger seqs follow it.
 */
export type WatchEventMessage = { type: "event"; seq: number; event: HarnessEvent };
export type WatchMessage<S> = { type: "snapshot"; seq: number; snapshot: S } | WatchEventMessage;

/**
 * A socket opened with `?batch=true` receives, whenever several events are due at once (a run's
 * start, a settlement), one frame holding their messages in seq order instead of one frame each.
 * Clients process the messages as if each had arrived alone; a single due event still comes as a
 * plain `event` message. Flow control counts the frame's bytes.
 */
export type WatchBatch = { type: "batch"; messages: WatchEventMessage[] };
export type WatchFrame<S> = WatchMessage<S> | WatchBatch;

/** The watch upgrade's query string: `batch=true` opts into batch frames. */
export const WatchQuerySchema = v.object({ batch: v.optional(v.picklist(["true", "false"], "batch is true or false")) });
export type LaneWatchMessage = WatchMessage<LaneSnapshot>;
export type SessionWatchMessage = WatchMessage<SessionSnapshot>;

/**
 * Client → server, besides the literal text `"ping"` (answered `"pong"` without waking the object):
 * `resnapshot` asks for a fresh snapshot; `ack` reports `bytes`, the UTF-8 byte length of every
 * snapshot and event message received on this socket so far (flow control, below).
 */
export const WatchClientMessageSchema = v.variant("type", [
  v.strictObject({ type: v.literal("resnapshot") }),
  v.strictObject({ type: v.literal("ack"), bytes: v.pipe(v.number(), v.safeInteger(), v.minValue(0)) }),
]);
export type WatchClientMessage = v.InferOutput<typeof WatchClientMessageSchema>;

/** The longest client message (in characters) the server reads; anything longer is a protocol violation. */
export const MAX_WATCH_CLIENT_MESSAGE_CHARS = 1024;

/**
 * The client's id of a command (spec/API.md "Commands on the lane socket"): a repeat of an id on
 * the same lane answers what the first answered and does nothing twice.
 */
export const WatchCommandIdSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(64), v.regex(/^[A-Za-z0-9_.:-]+$/, "A command id is 1–64 characters of A–Z, a–z, 0–9, _ . : -"));

/**
 * Commands on a lane socket, answered with a `reply` carrying what the REST twin answers:
 * `prompt` is `POST …/operations` with `kind: "prompt"` (202), `queue` is `POST …/queue` (201),
 * `abort` is `POST …/abort` without a wait (200).
 */
export const WatchCommandSchema = v.variant("type", [
  v.strictObject({ type: v.literal("prompt"), id: WatchCommandIdSchema, prompt: PromptInputSchema, images: ImagesSchema, operationId: OperationIdSchema, deferred: v.optional(DeferredModeSchema), ifBusy: v.optional(IfBusySchema) }),
  v.strictObject({ type: v.literal("queue"), id: WatchCommandIdSchema, ...EnqueueSchema.entries }),
  v.strictObject({ type: v.literal("abort"), id: WatchCommandIdSchema }),
]);
export type WatchCommand = v.InferOutput<typeof WatchCommandSchema>;

/** The largest command frame, in bytes of UTF-8: a prompt with its images goes over REST beyond it. */
export const MAX_WATCH_COMMAND_BYTES = 256 * 1024;

/**
 * Watch sockets one session holds at once, its SSE streams' relays included: a bound well above
 * an audience the fan-out is built for (P7, P14: 500 on one lane), and below the platform's 32,768
 * hibernatable sockets per object. An upgrade beyond is 422 LimitExceeded.
 */
export const MAX_WATCH_SOCKETS_PER_SESSION = 10_000;

/** Server → client: the answer to a command, with the status and body its REST twin answers. */
export type WatchReply = { type: "reply"; id: string; status: number; body: unknown };

// Flow control. workerd reports no `bufferedAmount` and no drain on server sockets, so the bound
// on what a socket may leave unread lives in the protocol: the server counts the bytes it sent on
// each socket, the client acknowledges what it received, and a socket whose unacknowledged bytes
// exceed the window when the next message is due is closed 1013 (its client reconnects and gets a
// fresh snapshot; nothing is lost but the socket). So one socket holds at most the window plus one
// message in the platform's send buffers, however slowly it reads.

/** Unacknowledged bytes a socket may hold before it is closed as a slow consumer (1013). */
export const WATCH_UNACKED_WINDOW_BYTES = 16 * 1024 * 1024;
/** A client acknowledges once this many bytes arrived since its last acknowledgement (the SDK does). */
export const WATCH_ACK_EVERY_BYTES = 1024 * 1024;
/**
 * Client messages per socket: a burst of this many, refilled at `WATCH_MESSAGES_PER_SECOND`; more
 * closes 1008. An acknowledgement that moves the window on is not counted (session/watch/watch-flow.ts).
 */
export const WATCH_MESSAGE_BURST = 100;
export const WATCH_MESSAGES_PER_SECOND = 10;
/** A socket is closed (1001) once this old at its next message, so clients reconnect at least daily. */
export const WATCH_MAX_SOCKET_AGE_MS = 24 * 60 * 60 * 1000;

/** Every close code the server sends on a watch socket (docs/api-watch.md "Close codes"). */
export const WATCH_CLOSE = {
  /** The session was deleted: reconnecting cannot succeed. */
  sessionDeleted: 1000,
  /** The socket reached its maximum age: reconnect. */
  maxAge: 1001,
  /** A binary frame. */
  binary: 1003,
  /** A protocol violation (invalid, oversized, too many or over-acknowledging messages) or a revoked key. */
  policy: 1008,
  /** The snapshot or a send failed on the server. */
  internal: 1011,
  /** The session restarted before the socket's first snapshot, or its engine was reopened after a fault: reconnect. */
  restart: 1012,
  /** A slow consumer: more than the window unacknowledged. Reconnect. */
  slowConsumer: 1013,
} as const;
export type WatchCloseCode = (typeof WATCH_CLOSE)[keyof typeof WATCH_CLOSE];

/**
 * The JSON variant of LaneWatchEvent (reference §5.4): not in lane streams at all, whatever the
 * lane. `settings_update` is the global configuration event.
 */
const NOT_IN_LANE_STREAMS: ReadonlySet<HarnessEvent["type"]> = new Set([
  "handler_error",
  "turn_start",
  "turn_end",
  "value_update",
  "lane_created",
  "settings_update",
]);

/**
 * Whether a lane stream carries an event (the fold's global rule, §5.4): the lane's own events,
 * plus the session-wide `usage`, `stats` and `fault`. Other lanes' events are not delivered.
 */
export function inLaneStream(event: HarnessEvent, lane: string): boolean {
  if (NOT_IN_LANE_STREAMS.has(event.type)) return false;
  if (event.type === "usage" || event.type === "stats" || event.type === "fault") return true;
  return "lane" in event && event.lane === lane;
}

/** The session stream: lane lifecycle (with its lane), operation starts and ends, usage, faults, settings. */
const IN_SESSION_STREAM: ReadonlySet<HarnessEvent["type"]> = new Set([
  "lane_created",
  "run_start",
  "run_end",
  "compaction_start",
  "compaction_end",
  "navigation_start",
  "navigation_end",
  "operation_abort",
  "run_suspend",
  "run_resume",
  "usage",
  "stats",
  "fault",
  "settings_update",
]);

export function inSessionStream(event: HarnessEvent): boolean {
  return IN_SESSION_STREAM.has(event.type);
}
