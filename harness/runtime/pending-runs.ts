import type { Entry } from "../../schema/entries.ts";
import type { HarnessEvent, OperationResultRecord } from "../../schema/lane.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import type { DeferredMode } from "../../schema/settings.ts";
import type { UsageRow } from "../../schema/usage.ts";
import { operationResult, pendingRun } from "../session/builtin-addresses.ts";
import { isUuidV7 } from "../session/ids.ts";
import type { SessionMutator } from "../session/mutation.ts";
import type { Write } from "../session/storage.ts";
import { deleteValue, setValue } from "../session/writes.ts";
import { planRunAcceptance, type OperationAdmission } from "./acceptance.ts";
import { terminalEvent } from "./drive/terminal.ts";
import type { HarnessCore } from "./core.ts";
import { err, ok, type Result } from "./errors.ts";
import type { Committed, LanePlan, Planner } from "./lane-command.ts";
import type { LaneProjection } from "./lane-state.ts";
import { resultWrite } from "./operation-codec.ts";

// Pending runs (spec "Prompt while busy", `ifBusy: "enqueue" | "interrupt"`): a prompt accepted
// while its lane is busy becomes a whole operation of its own (its id, later its record), waiting
// durably (`pi.pending.run/{op}` holds its request, the lane state its place in line). The commit
// that settles the lane's operation also accepts the first pending run (`startNextPending`), so a
// pending run starts exactly once, in order, with no moment in which the lane is idle while runs
// wait (a crash lands before that commit or after it). Unlike a queued `nextRun` item (input taken
// by whatever run starts next), a pending run is its own operation; cancelling it before it starts
// records it `aborted` with `cancelled_before_start`. A pending run that ends without starting
// (cancelled, or refused at its turn) still ends with its `run_end`, though it had no `run_start`:
// a stream following it (a streamed prompt, an AI SDK answer) learns there that it is over.

/** At most this many pending runs per lane (spec: 409 QueueFull beyond). */
export const MAX_PENDING_RUNS = 20;

/** A pending run's request as stored until it starts. */
export interface StoredPendingRun {
  messages: AgentMessage[];
  deferred?: DeferredMode;
  acceptedAt: number;
}

/** A pending run as answered: its place in line (1: next to start). */
export interface PendingAdmission {
  operationId: string;
  kind: "run";
  state: "pending";
  position: number;
  acceptedAt: number;
}

/** What a prompt accepted under `ifBusy` got: a run that started, or a place in line. */
export type PromptAdmission = OperationAdmission | PendingAdmission;

/**
 * A prompt that waits its turn when the lane is busy (`front`: ahead of every pending run, for an
 * interrupt); on an idle lane it is an ordinary acceptance. One commit either way.
 */
export function planPendingRun(
  core: HarnessCore,
  lane: string,
  operationId: string,
  messages: AgentMessage[],
  deferred: DeferredMode | undefined,
  place: "back" | "front",
): Planner<Result<PromptAdmission>> {
  return (m, state) => {
    if (!state.operation) return planRunAcceptance(core, lane, operationId, messages, deferred)(m, state);
    if (!isUuidV7(operationId) || core.operationOpen(operationId, lane) || state.pending.includes(operationId) || m.getValue(operationResult(operationId))) {
      return { writes: [], value: err({ code: "InvalidOperationId", operationId }) };
    }
    if (messages.length === 0) return { writes: [], value: err({ code: "InvalidMessage", lane, reason: "empty" }) };
    if (state.pending.length >= MAX_PENDING_RUNS) {
      return { writes: [], value: err({ code: "QueueFull", lane, pendingRuns: state.pending.length, maxPendingRuns: MAX_PENDING_RUNS }) };
    }
    const acceptedAt = core.clock();
    const stored: StoredPendingRun = { messages, ...(deferred !== undefined && { deferred }), acceptedAt };
    const pending = place === "front" ? [operationId, ...state.pending] : [...state.pending, operationId];
    return {
      writes: [setValue(pendingRun<StoredPendingRun>(operationId), stored)],
      next: { ...state, pending },
      value: ok({ operationId, kind: "run", state: "pending", position: pending.indexOf(operationId) + 1, acceptedAt }),
    };
  };
}

/** Cancels a pending run before it starts: its request goes, its record says so. */
export function planCancelPendingRun(core: HarnessCore, lane: string, operationId: string): Planner<Result<OperationResultRecord>> {
  return (m, state) => {
    const stored = m.getValue(pendingRun<StoredPendingRun>(operationId))?.value;
    if (!state.pending.includes(operationId) || !stored) return { writes: [], value: err({ code: "OperationMismatch", lane, expectedOperationId: operationId }) };
    const now = core.clock();
    const record: OperationResultRecord = {
      operationId,
      kind: "run",
      status: "aborted",
      error: { code: "cancelled_before_start", message: "The pending run was cancelled before it started" },
      fromTipId: null,
      tipId: null,
      startedAt: stored.acceptedAt,
      endedAt: Math.max(now, stored.acceptedAt),
    };
    return {
      writes: [deleteValue(pendingRun(operationId)), resultWrite(record, lane)],
      next: { ...state, pending: state.pending.filter((id) => id !== operationId) },
      events: () => [terminalEvent(lane, record)],
      afterCommit: () => core.wake.settled(lane, operationId),
      value: ok(record),
    };
  };
}

/**
 * The first pending run of a lane that has just become idle, accepted in the same commit as the
 * settlement before it (transition.ts). Its events see only its own entries. A run whose request
 * can no longer be accepted (it always could when it was taken) is recorded failed with the
 * refusal, and the next one is tried. Undefined when nothing waits.
 */
export function startNextPending(core: HarnessCore, lane: string, m: SessionMutator, idle: LaneProjection): LanePlan<void> | undefined {
  let state = idle;
  const writes: Write[] = [];
  const failed: OperationResultRecord[] = [];
  const settleFailed = (): void => {
    for (const record of failed) core.wake.settled(lane, record.operationId);
  };
  const failedEnds = (): HarnessEvent[] => failed.map((record) => terminalEvent(lane, record));
  for (const operationId of idle.pending) {
    state = { ...state, pending: state.pending.slice(1) };
    const stored = m.getValue(pendingRun<StoredPendingRun>(operationId))?.value;
    if (!stored) throw new Error(`Pending run ${operationId} of lane "${lane}" has no stored request`);
    writes.push(deleteValue(pendingRun(operationId)));
    const plan = planRunAcceptance(core, lane, operationId, stored.messages, stored.deferred)(m, state);
    if (plan.value.ok && plan.next) {
      const own = [...writes, ...plan.writes];
      return {
        writes: own,
        next: plan.next,
        events: (done) => [...failedEnds(), ...(plan.events?.(done && restrictedTo(done, own)) ?? [])],
        afterCommit: () => {
          settleFailed();
          plan.afterCommit?.();
        },
        value: undefined,
      };
    }
    const code = plan.value.ok ? "Refused" : plan.value.error.code;
    const error = { code, message: `The pending run could not start: ${code}` };
    const record: OperationResultRecord = { operationId, kind: "run", status: "failed", error, fromTipId: state.tipId, tipId: state.tipId, startedAt: stored.acceptedAt, endedAt: Math.max(core.clock(), stored.acceptedAt) };
    writes.push(resultWrite(record, lane));
    failed.push(record);
  }
  return writes.length > 0 ? { writes, next: state, events: failedEnds, afterCommit: settleFailed, value: undefined } : undefined;
}

/** A commit's placed entries and usage rows narrowed to those `writes` made (one commit, two plans). */
export function restrictedTo(done: Committed, writes: readonly Write[]): Committed {
  const entryIds = new Set(writes.flatMap((write) => (write.kind === "entry" ? [write.entry.id] : [])));
  const usageIds = new Set(writes.flatMap((write) => (write.kind === "usage" ? [write.row.id] : [])));
  const entries: Entry[] = done.entries.filter((entry) => entryIds.has(entry.id));
  const usage: UsageRow[] = done.usage.filter((row) => usageIds.has(row.id));
  return { commit: done.commit, entries, usage };
}
