import type { NewEntry } from "../../schema/entries.ts";
import type { InboxItem, InboxKind, LaneQueuedItem } from "../../schema/lane.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import type { JsonValue } from "../../schema/json.ts";
import { branchTip, pendingEntry, type PendingEntry } from "../session/builtin-addresses.ts";
import { deleteValue, insertEntry, setValue } from "../session/writes.ts";
import { placementEvents, queueUpdate } from "./acceptance.ts";
import type { Planner } from "./lane-command.ts";
import { entryOfQueued, queuedItemOf, queueView } from "./lane-state.ts";

// The lane-owned inbox (reference §3.7): enqueue always admits, cancel triages in one place, and
// an operation-aware append either places now (idle) or queues a `write` item (busy).

export type CancelQueuedResult = "cancelled" | "already_consumed" | "not_found";

/** One commit: the payload at `pendingEntry(id)` plus the inbox item; emits the whole queue. */
export function planEnqueue(lane: string, item: InboxItem, payload: PendingEntry): Planner<{ entryId: string }> {
  return (_m, state) => {
    const inbox = [...state.inbox, item];
    const queued = new Map(state.queued).set(item.entryId, queuedItemOf(item, payload));
    return {
      writes: [setValue(pendingEntry(item.entryId), payload)],
      next: { ...state, inbox, queued },
      events: () => [queueUpdate(lane, queueView({ inbox, queued }))],
      value: { entryId: item.entryId },
    };
  };
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
export function planLaneAppend(lane: string, entryId: string, input: AppendInput): Planner<{ entryId: string; placed: boolean }> {
  return (m, state) => {
    const payload: PendingEntry =
      input.type === "message"
        ? { type: "message", payload: input.message }
        : { type: "custom", customType: input.customType, ...(input.data !== undefined && { payload: input.data }) };
    if (state.operation) {
      const plan = planEnqueue(lane, { entryId, kind: "write" }, payload)(m, state);
      return { ...plan, value: { entryId, placed: false } };
    }
    const writesFirst = state.inbox.filter((item) => item.kind === "write");
    const views: LaneQueuedItem[] = writesFirst.flatMap((item) => state.queued.get(item.entryId) ?? []);
    const placed: NewEntry[] = [];
    let parentId = state.tipId;
    for (const view of views) {
      placed.push(entryOfQueued(view, parentId));
      parentId = view.entryId;
    }
    placed.push(entryOfQueued(queuedItemOf({ entryId, kind: "write" }, payload), parentId));
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
      value: { entryId, placed: true },
    };
  };
}

export const QUEUE_KINDS: readonly InboxKind[] = ["steer", "followUp", "nextRun"];
