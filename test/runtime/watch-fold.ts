import { AgentHarness } from "../../harness/runtime/harness.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import { foldEvents } from "../lane-fold.ts";
import type { WatchHandle } from "../../harness/runtime/watch.ts";

// Fold equivalence (reference §5.4, ARCHITECTURE D13): a watch snapshot folded over its own later
// events must equal a later snapshot.

export interface Watched {
  watch: WatchHandle;
  /** A deep copy of the snapshot as captured (reduceLaneSnapshot must never mutate it). */
  captured: LaneSnapshot;
  events: HarnessEvent[];
}

/** Opens a watch and starts collecting its events at once. */
export async function openWatched(lane: AgentLane): Promise<Watched> {
  const watch = await lane.watch();
  const captured = structuredClone(watch.snapshot);
  const events: HarnessEvent[] = [];
  watch.start((event) => {
    events.push(event);
  });
  return { watch, captured, events };
}

export { foldEvents };

/** Waits until every batch bound so far has been delivered (an empty batch joins the tail). */
export function deliveredSoFar(harness: AgentHarness): Promise<void> {
  return harness.events.emitBatch([]);
}

/** The folded snapshot and a fresh capture, after every bound event was delivered. */
export async function foldAndCapture(harness: AgentHarness, lane: AgentLane, watched: Watched): Promise<{ folded: LaneSnapshot; fresh: LaneSnapshot }> {
  await deliveredSoFar(harness);
  const folded = foldEvents(watched.watch.snapshot, watched.events);
  const later = await lane.watch();
  later.unsubscribe();
  return { folded, fresh: later.snapshot };
}
