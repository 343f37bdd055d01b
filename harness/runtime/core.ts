import type { HarnessEvent } from "../../schema/lane.ts";
import type { HarnessResources, HarnessSettings } from "../../schema/settings.ts";
import type { EntryProjectors } from "../execution/context.ts";
import type { ModelsPort } from "../execution/models.ts";
import type { IdGenerator } from "../session/ids.ts";
import type { Session } from "../session/session.ts";
import type { HookRegistry } from "../execution/hooks.ts";
import type { ToolsPort } from "../execution/tools.ts";
import type { CaptureStore } from "./captures.ts";

/**
 * Asks the host to call back (ARCHITECTURE D3, D7, D14.9). Called synchronously inside the
 * committing mutation, so a host that records due work in the same storage writes it in the same
 * atomic batch as the transition that made it due.
 */
export interface WakeScheduler {
  /** The operation needs a drive pass at `at` (ms since epoch; now for "as soon as possible"). */
  due(lane: string, operationId: string, at: number): void;
  /** The operation settled: nothing is due for it any more. */
  settled(lane: string, operationId: string): void;
  /**
   * The operation is open but waits for something from outside (a client's tool result): nothing
   * is due until that arrives and asks for a pass again.
   */
  parked?(lane: string, operationId: string): void;
  /**
   * The run suspended on a deferred response (reference §3.11): nothing is due in this object; the
   * host's sweep grants a poll permit from `pollAt` on (D8, D14.9). Hosts without a sweep treat it
   * as parked.
   */
  suspended?(lane: string, operationId: string, pollAt: number): void;
}

export const noWakeScheduler: WakeScheduler = { due: () => {}, settled: () => {} };

/**
 * How many milliseconds apart a lane's live `message_update` events go out (at least the wire
 * throttle's 50 ms, ARCHITECTURE D10). A host that fans events out to many watchers spaces them
 * further as the lane's audience grows: each update costs one send per watcher, and durable events
 * (entries, ends) must not queue behind a flood of partials. Deltas coalesce meanwhile, so nothing
 * is lost, only fewer and larger updates are sent.
 */
export type LiveUpdatePacing = (lane: string) => number;

/** The event bus as the engine uses it (reference §5.2). */
export interface EventSink {
  /** Binds recipients when called (inside the mutation); resolves once the batch is delivered. */
  emitBatch(events: HarnessEvent[]): Promise<void>;
  /** Every event from now on; returns the unsubscribe function. */
  on(type: "*", listener: (event: HarnessEvent) => void | Promise<void>): () => void;
}

/** What lanes and drive procedures share with their harness. */
export interface HarnessCore {
  readonly session: Session;
  readonly models: ModelsPort;
  readonly tools: ToolsPort;
  readonly events: EventSink;
  readonly hooks: HookRegistry;
  readonly clock: () => number;
  readonly liveUpdateIntervalMs: LiveUpdatePacing;
  readonly ids: IdGenerator;
  readonly wake: WakeScheduler;
  readonly projectors: EntryProjectors;
  /** Content-addressed captures of what operations keep (settings, configurations). */
  readonly captures: CaptureStore;
  /**
   * Whether `operationId` is open in this harness: current on any lane, or pending on a lane other
   * than `lane` (its lane state holds it, so no value of its own answers that: every lane is
   * restored on attachment, acceptance.ts). A pending run's id is taken session-wide like a running
   * one's; `lane`'s own pending line is read from the planner's state, which a pending run's start
   * has already moved past (pending-runs.ts startNextPending).
   */
  operationOpen(operationId: string, lane: string): boolean;
  /** `${sessionId}:${lane}` is the provider cache identity of a lane (reference §7.1, M10). */
  readonly sessionId: string;
  settings(): HarnessSettings;
  resources(): HarnessResources;
  /** Throws HarnessClosed / HarnessFault once the harness no longer admits work. */
  assertOpen(): void;
  /**
   * Throws HarnessFault after a fault. Checked on the line by every mutation: after a close,
   * mutations admitted before the seal still finish (D14.4); after a fault nothing commits.
   */
  assertUnfaulted(): void;
  /** Seals everything after a storage failure or invariant violation (reference §2.4). */
  fault(error: unknown): Error;
}
