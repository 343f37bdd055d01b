import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import type { SessionMutator } from "../session/mutation.ts";
import type { Session } from "../session/session.ts";
import type { EventSink } from "./core.ts";

export interface WatchHandle<T = LaneSnapshot> {
  readonly snapshot: T;
  /** Delivers the events held since the latest snapshot, then live ones, in order. */
  start(listener: (event: HarnessEvent) => void): void;
  /**
   * A fresh snapshot (§5.3): events bound before it are dropped; events bound after it are held
   * until the caller has installed it and calls `start` again, so none reaches the old replica.
   */
  resnapshot(): Promise<T>;
  unsubscribe(): void;
}

/** What watches need of the harness: its line and its bus. */
export interface WatchSource {
  readonly session: Session;
  readonly events: EventSink;
}

/**
 * A gap-free watch (reference §5.3): the snapshot is captured inside a no-commit mutation and the
 * subscription is made in the same callback, so every batch bound after the capture reaches the
 * watcher and none bound before it does. Each capture starts a new generation whose events are
 * held until `start` hands them a listener.
 */
export async function openWatch<T>(source: WatchSource, capture: (m: SessionMutator) => T): Promise<WatchHandle<T>> {
  let held: HarnessEvent[] = [];
  let listener: ((event: HarnessEvent) => void) | undefined;
  let generation = 0;
  const deliver = (mine: number) => (event: HarnessEvent) => {
    if (mine !== generation) return;
    if (listener) listener(event);
    else held.push(event);
  };
  let unsubscribe = () => {};
  const recapture = async (): Promise<T> => {
    // The callback returns nothing: MutationCallback refuses a generic (possibly thenable) result.
    let snapshot!: T;
    await source.session.mutate((m) => {
      snapshot = capture(m);
      unsubscribe();
      generation++;
      held = [];
      // The caller has not installed this snapshot yet: hold its events until `start`.
      listener = undefined;
      unsubscribe = source.events.on("*", deliver(generation));
    });
    return snapshot;
  };
  const snapshot = await recapture();
  return {
    snapshot,
    start(next) {
      listener = next;
      const pending = held;
      held = [];
      for (const event of pending) next(event);
    },
    resnapshot: recapture,
    unsubscribe: () => unsubscribe(),
  };
}

/**
 * One continuous, ordered stream of every event, for hosts that fan out to many watchers (a
 * WebSocket hub): each event reaches the listener exactly once, in bind order, however many
 * captures are taken meanwhile.
 */
export interface EventFeed {
  /**
   * Runs `read` on the line (a no-commit mutation) and places a boundary in the feed at that
   * point: `atBoundary(value)` runs after every event bound before the capture was delivered to
   * the listener and before any event bound after it is. The promise resolves with the value
   * (possibly before or after the boundary ran) and rejects, without a boundary, when `read` throws.
   */
  capture<T>(read: (m: SessionMutator) => T, atBoundary: (value: T) => void): Promise<T>;
  /** Stops delivery; boundaries not yet reached never run. */
  close(): void;
}

/**
 * The feed swaps its bus subscription inside each capture: batches bound before the capture hold
 * the old subscription, later ones the new one (the bus binds recipients at emit), so no event is
 * delivered twice or skipped. A boundary runs when the first event of its (or a later)
 * subscription arrives, or when an empty batch bound at the capture has been delivered (every
 * earlier batch is delivered by then, none later has started), whichever comes first.
 */
export function openFeed(source: WatchSource, listener: (event: HarnessEvent) => void): EventFeed {
  let closed = false;
  let generation = 0;
  const boundaries: { generation: number; run: () => void }[] = [];
  const reach = (upTo: number) => {
    while (!closed && boundaries[0] !== undefined && boundaries[0].generation <= upTo) boundaries.shift()?.run();
  };
  const receive = (mine: number) => (event: HarnessEvent) => {
    if (closed) return;
    reach(mine);
    listener(event);
  };
  let unsubscribe = source.events.on("*", receive(generation));
  return {
    async capture(read, atBoundary) {
      let value!: Parameters<typeof atBoundary>[0];
      await source.session.mutate((m) => {
        value = read(m);
        if (closed) return;
        unsubscribe();
        const mine = ++generation;
        unsubscribe = source.events.on("*", receive(mine));
        const captured = value;
        boundaries.push({ generation: mine, run: () => atBoundary(captured) });
        void source.events.emitBatch([]).then(() => reach(mine));
      });
      return value;
    },
    close() {
      closed = true;
      boundaries.length = 0;
      unsubscribe();
    },
  };
}
