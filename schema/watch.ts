import * as v from "valibot";
import type { HarnessEvent, LaneInfo, LaneSnapshot } from "./lane.ts";
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
export type WatchMessage<S> = { type: "snapshot"; seq: number; snapshot: S } | { type: "event"; seq: number; event: HarnessEvent };
export type LaneWatchMessage = WatchMessage<LaneSnapshot>;
export type SessionWatchMessage = WatchMessage<SessionSnapshot>;

/** Client → server, besides the literal text `"ping"` (answered `"pong"` without waking the object). */
export const WatchClientMessageSchema = v.strictObject({ type: v.literal("resnapshot") });
export type WatchClientMessage = v.InferOutput<typeof WatchClientMessageSchema>;

/** The longest client message (in characters) the server reads; anything longer is a protocol violation. */
export const MAX_WATCH_CLIENT_MESSAGE_CHARS = 1024;

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
