import type { Entry } from "../../schema/entries.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import type { UsageRow } from "../../schema/usage.ts";
import { laneState } from "../session/builtin-addresses.ts";
import { PayloadTooLarge } from "../session/errors.ts";
import type { SessionMutator } from "../session/mutation.ts";
import type { CommitResult, Write } from "../session/storage.ts";
import { setValue } from "../session/writes.ts";
import type { HarnessCore } from "./core.ts";
import { committed, durableLaneState, sameDurableLaneState, type LaneProjection } from "./lane-state.ts";
import { storedLaneState, type StoredLaneState } from "./lane-state-form.ts";
import { storedOpenOperation } from "./operation-codec.ts";

/** What a committed plan produced, for building its events. */
export interface Committed {
  commit: CommitResult;
  entries: Entry[];
  usage: UsageRow[];
}

/**
 * One lane decision: bounded reads already done by the planner, the write set of at most one
 * commit, the next projection, and the events the commit justifies. The durable lane state, with
 * the open operation it holds (operation-codec.ts), is appended automatically, last, exactly when
 * one of its fields or the operation changed (reference §3.2).
 */
export interface LanePlan<T> {
  writes: Write[];
  next?: LaneProjection;
  events?: (done: Committed | undefined) => HarnessEvent[];
  /** Runs after the commit and event binding, still on the line (e.g. signalling an abort gate). */
  afterCommit?: () => void;
  value: T;
}

export type Planner<T> = (m: SessionMutator, state: LaneProjection) => LanePlan<T>;

/**
 * Runs one lane command as one synchronous session mutation (ARCHITECTURE D4): plan, commit,
 * publish the projection, bind event recipients; delivery is awaited after the line is released.
 */
export async function runLaneCommand<T>(core: HarnessCore, lane: LaneTarget, planner: Planner<T>): Promise<T> {
  core.assertOpen();
  const { value, delivered } = await core.session.mutate((m) => applyLanePlan(core, lane, m, planner));
  await delivered;
  return value;
}

/** The lane a command publishes to. */
export interface LaneTarget {
  name: string;
  state: LaneProjection;
  publish(next: LaneProjection): void;
  /** The entries a lane commit placed on its branch, in placement order (a warm context extends). */
  placed?(entries: readonly Entry[]): void;
}

/**
 * One lane decision inside a mutation the caller holds: for commands that first decide on the
 * line whether a lane is involved at all (e.g. an append to a branch that may have a lane).
 */
export function applyLanePlan<T>(core: HarnessCore, lane: LaneTarget, m: SessionMutator, planner: Planner<T>): { value: T; delivered: Promise<void> } {
  // A fault between queuing and running: nothing more may commit (§2.4). (After a close,
  // mutations admitted before the seal still finish, D14.4.)
  core.assertUnfaulted();
  const plan = planner(m, lane.state);
  const writes = [...plan.writes];
  if (plan.next && laneStateChanged(lane.state, plan.next)) writes.push(...laneStateWrites(core, m, lane.name, plan.next));
  let done: Committed | undefined;
  if (writes.length > 0) {
    let commit: CommitResult;
    try {
      commit = m.commit(writes);
    } catch (error) {
      // A refused payload wrote nothing and leaves state coherent; any other failure is a fault.
      if (error instanceof PayloadTooLarge) throw error;
      throw core.fault(error);
    }
    done = { commit, ...committed(writes, commit) };
    if (done.entries.length > 0) lane.placed?.(done.entries);
  }
  if (plan.next) lane.publish(plan.next);
  const events = withStats(plan.events?.(done) ?? [], done);
  const delivered = events.length > 0 ? core.events.emitBatch(events) : Promise.resolve();
  plan.afterCommit?.();
  return { value: plan.value, delivered };
}

/**
 * Whether a plan changes what the lane state stores. Planners make a new operation object exactly
 * when they move the operation (acceptance, a transition, the cancellation marker, the
 * settlement) and carry the same object over otherwise.
 */
function laneStateChanged(before: LaneProjection, after: LaneProjection): boolean {
  return before.operation !== after.operation || !sameDurableLaneState(durableLaneState(before), durableLaneState(after));
}

/** The lane state's write, after the captures its operation needs stored first. */
function laneStateWrites(core: HarnessCore, m: SessionMutator, name: string, projection: LaneProjection): Write[] {
  const open = projection.operation ? storedOpenOperation(m, core.captures, projection.operation) : undefined;
  return [...(open?.writes ?? []), setValue(laneState<StoredLaneState>(name), storedLaneState(durableLaneState(projection), open?.stored))];
}

/**
 * Placed messages change the session stats every lane stream replicates (§5.4 fold, all lanes):
 * a `stats` event follows the batch's last `entry_added` / `usage`.
 */
export function withStats(events: HarnessEvent[], done: Pick<Committed, "entries" | "commit"> | undefined): HarnessEvent[] {
  if (!done?.entries.some((entry) => entry.type === "message")) return events;
  const after = events.findLastIndex((event) => event.type === "entry_added" || event.type === "usage") + 1;
  return [...events.slice(0, after), { type: "stats", stats: done.commit.stats }, ...events.slice(after)];
}
