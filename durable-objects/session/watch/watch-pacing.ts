import { WIRE_UPDATE_INTERVAL_MS } from "../../../harness/execution/frames-throttle.ts";

/**
 * The fan-out budget of a lane's live updates: about this many `message_update` sends per second,
 * whatever the audience. Every update is one send per watcher; at the wire throttle's 20 updates a
 * second, 500 watchers would mean 10,000 sends a second from one object, and the events that
 * matter (entries, ends of messages and runs) would queue behind them (bench P7).
 */
export const LIVE_UPDATE_SENDS_PER_SECOND = 1_000;
/** However large the audience, a streaming answer still shows progress at least once a second. */
export const LIVE_UPDATE_MAX_INTERVAL_MS = 1_000;

/**
 * The spacing of live updates for a lane with `watchers` sockets: the wire throttle's 50 ms up to
 * 50 watchers, then growing with the audience so the lane stays within its send budget, capped at
 * one second. Deltas coalesce in between: fewer, larger updates carry the same text.
 */
export function liveUpdateIntervalFor(watchers: number): number {
  const budgeted = Math.ceil((watchers * 1_000) / LIVE_UPDATE_SENDS_PER_SECOND);
  return Math.min(LIVE_UPDATE_MAX_INTERVAL_MS, Math.max(WIRE_UPDATE_INTERVAL_MS, budgeted));
}
