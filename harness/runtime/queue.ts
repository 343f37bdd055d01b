import type { CancelQueuedResult } from "../../schema/lane-answers.ts";
import type { NewEntry } from "../../schema/entries.ts";
import { MAX_QUEUED_BYTES, MAX_QUEUED_ITEMS, type InboxItem, type InboxKind, type LaneQueuedItem } from "../../schema/lane.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import type { JsonValue } from "../../schema/json.ts";
import { branchTip, pendingEntry, type PendingEntry } from "../session/builtin-addresses.ts";
import { deleteValue, insertEntry, setValue } from "../session/writes.ts";
import { placementEvents, queueUpdate } from "./acceptance.ts";
import { err, ok, type LaneError, type Result } from "./errors.ts";
import type { Planner } from "./lane-command.ts";
import { entryOfQueued, queuedItemOf, queueView, type LaneProjection } from "./lane-state.ts";

// The lane-owned inbox (reference §3.7): enqueue always admits, cancel triages in one place, and
// an operation-aware append either places now (idle) or queues a `write` item (busy).

export type { CancelQueuedResult };

/**
 * One commit: the payload at `pendingEntry(id)` plus the inbox item; emits the whole queue. The
 * queue is bounded (items and payload bytes, checked on the line): a full queue refuses the item
 * with QueueFull and writes nothing.
 */
export function planEnqueue(lane: string, item: InboxItem, payload: PendingEntry): Planner<Result<{ entryId: string }>> {
  return (_m, state) => {
    const view = queuedItemOf(item, payload);
    const full = queueFull(lane, state, view);
    if (full) return { writes: [], value: full };
    const inbox = [...state.inbox, item];
    const queued = new Map(state.queued).set(item.entryId, view);
    return {
      writes: [setValue(pendingEntry(item.entryId), payload)],
      next: { ...state, inbox, queued },
      events: () => [queueUpdate(lane, queueView({ inbox, queued }))],
      value: ok({ entryId: item.entryId }),
    };
  };
}

const sizes = new WeakMap<LaneQueuedItem, number>();

/** JSON bytes of a queued item (memoized: views are immutable). */
function sizeOf(view: LaneQueuedItem): number {
  let size = sizes.get(view);
  if (size === undefined) {
    size = new TextEncoder().encode(JSON.stringify(view)).byteLength;
    sizes.set(view, size);
  }
  return size;
}

/** QueueFull when one more item would pass the lane queue's bounds. */
function queueFull(lane: string, state: Pick<LaneProjection, "queued">, adding: LaneQueuedItem): { ok: false; error: LaneError } | undefined {
  const items = state.queued.size;
  let bytes = 0;
  for (const view of state.queued.values()) bytes += sizeOf(view);
  if (items + 1 <= MAX_QUEUED_ITEMS && bytes + sizeOf(adding) <= MAX_QUEUED_BYTES) return undefined;
  return err({ code: "QueueFull", lane, items, bytes, maxItems: MAX_QUEUED_ITEMS, maxBytes: MAX_QUEUED_BYTES });
}

export function planCancelQueued(lane: string, entryId: string): Planner<CancelQueuedResult> {
  return (m, state) => {
    if (state.inbox.some((item) => item.entryId === entryId)) {
      const inbox = state.inbox.filter((item) => item.entryId !== entryId);
      const queued = new Map(state.queued);
      queued.delete(entryId);
      return {
        writes: [deleteValue(pendingEntry(entryId))],
        next: { ...state, inbox, queued },
        events: () => [queueUpdate(lane, queueView({ inbox, queued }))],
        value: "cancelled",
      };
    }
    return { writes: [], value: m.getEntries([entryId]).has(entryId) ? "already_consumed" : "not_found" };
  };
}

export type AppendInput = { type: "message"; message: AgentMessage } | { type: "custom"; customType: string; data?: JsonValue };

/**
 * Idle: place every queued `write` (in inbox order) and then the new entry, chained from the tip,
 * in one commit. Busy (any open operation): reserve the id and queue it as a `write` item.
 */
export function planLaneAppend(lane: string, entryId: string, input: AppendInput): Planner<Result<{ entryId: string; placed: boolean }>> {
  return (m, state) => {
    const payload = pendingOf(input);
    if (state.operation) {
      const plan = planEnqueue(lane, { entryId, kind: "write" }, payload)(m, state);
      return { ...plan, value: plan.value.ok ? ok({ entryId, placed: false }) : plan.value };
    }
    const writesFirst = state.inbox.filter((item) => item.kind === "write");
    const views: LaneQueuedItem[] = writesFirst.flatMap((item) => state.queued.get(item.entryId) ?? []);
    const placed: NewEntry[] = [];
    let parentId = state.tipId;
    for (const view of views) {
      placed.push(entryOfQueued(view, parentId));
      parentId = view.entryId;
    }
    placed.push(entryOfAppend(entryId, input, parentId));
    const placedIds = new Set(views.map((view) => view.entryId));
    const inbox = state.inbox.filter((item) => !placedIds.has(item.entryId));
    const queued = new Map([...state.queued].filter(([id]) => !placedIds.has(id)));
    return {
      writes: [...placed.map(insertEntry), ...views.map((view) => deleteValue(pendingEntry(view.entryId))), setValue(branchTip(lane), entryId)],
      next: { ...state, tipId: entryId, inbox, queued },
      events: (done) => [
        ...placementEvents(lane, undefined, done?.entries ?? []),
        ...(views.length > 0 ? [queueUpdate(lane, queueView({ inbox, queued }))] : []),
      ],
      value: ok({ entryId, placed: true }),
    };
  };
}

/** An append's payload as the inbox keeps it (the `pendingEntry` of a queued write). */
export function pendingOf(input: AppendInput): PendingEntry {
  return input.type === "message"
    ? { type: "message", payload: input.message }
    : { type: "custom", customType: input.customType, ...(input.data !== undefined && { payload: input.data }) };
}

/** The entry an append becomes when it is placed under `parentId`. */
export function entryOfAppend(entryId: string, input: AppendInput, parentId: string | null): NewEntry {
  return entryOfQueued(queuedItemOf({ entryId, kind: "write" }, pendingOf(input)), parentId);
}

export const QUEUE_KINDS: readonly InboxKind[] = ["steer", "followUp", "nextRun"];
