import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import type { AssistantMessage } from "../../schema/messages.ts";
import type { HarnessCore } from "./core.ts";
import type { LaneProjection } from "./lane-state.ts";
import { captureSnapshot } from "./snapshot.ts";

export interface WatchHandle {
  readonly snapshot: LaneSnapshot;
  /** Delivers the events buffered since the snapshot, then live ones, in order. */
  start(listener: (event: HarnessEvent) => void): void;
  /** A fresh snapshot; events bound before it are dropped, later ones follow it (§5.3). */
  resnapshot(): Promise<LaneSnapshot>;
  unsubscribe(): void;
}

/**
 * A gap-free watch (reference §5.3): the snapshot is captured inside a no-commit mutation and the
 * subscription is made in the same callback, so every batch bound after the capture reaches the
 * watcher and none bound before it does.
 */
export async function openWatch(
  core: HarnessCore,
  lane: { name: string; state: LaneProjection },
  live: () => { streaming?: AssistantMessage; faulted: boolean },
): Promise<WatchHandle> {
  let buffer: HarnessEvent[] = [];
  let listener: ((event: HarnessEvent) => void) | undefined;
  let generation = 0;
  const deliver = (mine: number) => (event: HarnessEvent) => {
    if (mine !== generation) return;
    if (listener) listener(event);
    else buffer.push(event);
  };
  let unsubscribe = () => {};
  const capture = (): Promise<LaneSnapshot> =>
    core.session.mutate((m) => {
      const snapshot = captureSnapshot(m, lane.name, lane.state, live());
      unsubscribe();
      generation++;
      buffer = [];
      unsubscribe = core.events.on("*", deliver(generation));
      return snapshot;
    });
  const snapshot = await capture();
  return {
    snapshot,
    start(next) {
      listener = next;
      const pending = buffer;
      buffer = [];
      for (const event of pending) next(event);
    },
    resnapshot: capture,
    unsubscribe: () => unsubscribe(),
  };
}
