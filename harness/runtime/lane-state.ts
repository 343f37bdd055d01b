import type { Entry, NewEntry } from "../../schema/entries.ts";
import type { InboxItem, LaneConfiguration, LaneQueuedItem } from "../../schema/lane.ts";
import type { UsageRow } from "../../schema/usage.ts";
import type { PendingEntry } from "../session/builtin-addresses.ts";
import type { CommitResult, Write } from "../session/storage.ts";
import type { DurableLaneState, OperationMeta, OperationState } from "./types.ts";

/**
 * The authoritative process-local projection of one lane (reference §3.2). Rebuilt on attachment
 * from branchTip + laneConfig + laneState (+ the current operation's meta and state); afterwards
 * every mutation updates it before the line is released, and procedures never re-read those values.
 */
export interface LaneProjection {
  tipId: string | null;
  configuration: LaneConfiguration;
  inbox: InboxItem[];
  /** Payload views of the inbox items, for queue events and snapshots without re-reading. */
  queued: ReadonlyMap<string, LaneQueuedItem>;
  lastOperationId: string | null;
  operation: { meta: OperationMeta; state: OperationState } | null;
  /**
   * Pending runs (spec "Prompt while busy", pending-runs.ts): whole operations accepted while the
   * lane was busy, started one by one, in this order, by the settlement before them. Never
   * non-empty on an idle lane.
   */
  pending: readonly string[];
}

export function durableLaneState(projection: LaneProjection): DurableLaneState {
  return { lastOperationId: projection.lastOperationId, inbox: projection.inbox, pending: [...projection.pending] };
}

export function sameDurableLaneState(a: DurableLaneState, b: DurableLaneState): boolean {
  const pendingA = a.pending ?? [];
  const pendingB = b.pending ?? [];
  return (
    a.lastOperationId === b.lastOperationId &&
    a.inbox.length === b.inbox.length &&
    a.inbox.every((item, index) => item.entryId === b.inbox[index]?.entryId && item.kind === b.inbox[index]?.kind) &&
    pendingA.length === pendingB.length &&
    pendingA.every((id, index) => id === pendingB[index])
  );
}

/** The queue in global admission order, with payloads (the `queue_update` / snapshot view). */
export function queueView(projection: Pick<LaneProjection, "inbox" | "queued">): LaneQueuedItem[] {
  return projection.inbox.flatMap((item) => {
    const view = projection.queued.get(item.entryId);
    return view ? [view] : [];
  });
}

export function queuedItemOf(item: InboxItem, pending: PendingEntry): LaneQueuedItem {
  if (pending.type === "message") return { entryId: item.entryId, kind: item.kind, type: "message", message: pending.payload };
  return {
    entryId: item.entryId,
    kind: "write",
    type: "custom",
    customType: pending.customType,
    ...(pending.payload !== undefined && { data: pending.payload }),
  };
}

/** The entry a queued item becomes when it is placed under `parentId`. */
export function entryOfQueued(view: LaneQueuedItem, parentId: string | null): NewEntry {
  if (view.type === "message") return { id: view.entryId, parentId, type: "message", message: view.message };
  return {
    id: view.entryId,
    parentId,
    type: "custom",
    customType: view.customType,
    ...(view.data !== undefined && { data: view.data }),
  };
}

/** The entries and usage rows a commit inserted, stamped with their seq and timestamp. */
export function committed(writes: readonly Write[], commit: CommitResult): { entries: Entry[]; usage: UsageRow[] } {
  const entries: Entry[] = [];
  const usage: UsageRow[] = [];
  writes.forEach((write, index) => {
    const seq = commit.seqs[index] ?? 0;
    if (write.kind === "entry") entries.push(stamp(write.entry, seq, commit.timestamp));
    if (write.kind === "usage") usage.push({ ...write.row, seq });
  });
  return { entries, usage };
}

function stamp(entry: NewEntry, seq: number, timestamp: number): Entry {
  const stamped: object = { ...entry, seq, timestamp };
  return stamped as Entry;
}
