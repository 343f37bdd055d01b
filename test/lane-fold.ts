import type { HarnessEvent, LaneSnapshot } from "../schema/lane.ts";
import { isRebase, reduceLaneSnapshot } from "../schema/reduce-lane-snapshot.ts";

// Shared by the workerd tests (test/runtime/watch-fold.ts) and the end-to-end clients
// (test/e2e/client-helpers.ts): the fold a watcher makes, where a rebase is never expected.

/** Folds a snapshot over events with the normative reducer; a rebase fails the fold. */
export function foldEvents(snapshot: LaneSnapshot, events: readonly HarnessEvent[]): LaneSnapshot {
  let folded = snapshot;
  for (const event of events) {
    const next = reduceLaneSnapshot(folded, event);
    if (isRebase(next)) throw new Error(`unexpected rebase at ${event.type}`);
    folded = next;
  }
  return folded;
}
