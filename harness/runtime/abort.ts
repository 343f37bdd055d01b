import type { AbortRequestResult } from "../../schema/lane-answers.ts";
import type { InboxItem, LaneQueuedItem } from "../../schema/lane.ts";
import { pendingEntry } from "../session/builtin-addresses.ts";
import { PayloadTooLarge } from "../session/errors.ts";
import { deleteValue } from "../session/writes.ts";
import { queueUpdate } from "./acceptance.ts";
import type { HarnessCore } from "./core.ts";
import { err, ok, type Result } from "./errors.ts";
import type { GateControl } from "../execution/effect-gate.ts";
import { runLaneCommand, type Planner } from "./lane-command.ts";
import type { LaneProjection } from "./lane-state.ts";
import { queueView } from "./lane-state.ts";
import type { OperationState } from "./types.ts";

export type { AbortRequestResult };

/**
 * requestAbort's one commit (reference §4.4): the cancellation marker, and every steer and
 * followUp item drained with its payload returned. nextRun and write items stay queued. The
 * marker commit, the bound events and the gate signal all happen before the line is released
 * (D14.3); a stale id cancels nothing.
 */
/**
 * `keepInput`: the queued steers and follow-ups are not handed back but kept as next-run input, in
 * the same commit, for the run that starts next (an interrupt with no caller to hand them to: a
 * schedule's). Otherwise they leave the queue and are answered to the caller (§4.4).
 */
export function planRequestAbort(core: HarnessCore, lane: string, operationId: string, onMarked: () => void, keepInput = false): Planner<Result<AbortRequestResult>> {
  return (_m, state) => {
    const current = state.operation;
    if (!current || current.meta.operationId !== operationId) {
      return {
        writes: [],
        value: err({
          code: "OperationMismatch",
          lane,
          expectedOperationId: operationId,
          ...(current && { currentOperationId: current.meta.operationId }),
          ...(state.lastOperationId !== null && { lastOperationId: state.lastOperationId }),
        }),
      };
    }
    if (current.state.control.status === "cancel_requested") {
      return { writes: [], value: ok({ operationId, newlyRequested: false, steer: [], followUp: [] }) };
    }
    const drained = state.inbox.filter((item) => item.kind === "steer" || item.kind === "followUp");
    const drainedIds = new Set(drained.map((item) => item.entryId));
    const marked: OperationState = { ...current.state, control: { status: "cancel_requested", requestedAt: core.clock() } };
    const { inbox, queued, steer, followUp } = keepInput ? keptAsNextRun(state, drainedIds) : handedBack(state, drained, drainedIds);
    return {
      // Handed back, their payloads go; kept, they stay where they are with another kind.
      writes: keepInput ? [] : drained.map((item) => deleteValue(pendingEntry(item.entryId))),
      next: { ...state, inbox, queued, operation: { meta: current.meta, state: marked } },
      events: () => [
        { type: "operation_abort", lane, operationId, steer, followUp },
        ...(drained.length > 0 ? [queueUpdate(lane, queueView({ inbox, queued }))] : []),
      ],
      afterCommit: onMarked,
      value: ok({ operationId, newlyRequested: true, steer, followUp }),
    };
  };
}

type Drained = Pick<LaneProjection, "inbox" | "queued"> & Pick<AbortRequestResult, "steer" | "followUp">;

/** The drained steers and follow-ups leave the queue, their messages answered to the caller. */
function handedBack(state: LaneProjection, drained: readonly InboxItem[], drainedIds: ReadonlySet<string>): Drained {
  const messagesOf = (kind: "steer" | "followUp") =>
    drained.flatMap((item) => {
      const view = state.queued.get(item.entryId);
      return item.kind === kind && view?.type === "message" ? [view.message] : [];
    });
  return {
    inbox: state.inbox.filter((item) => !drainedIds.has(item.entryId)),
    queued: new Map([...state.queued].filter(([id]) => !drainedIds.has(id))),
    steer: messagesOf("steer"),
    followUp: messagesOf("followUp"),
  };
}

/** The drained steers and follow-ups stay queued, in place, as next-run input; nothing is answered. */
function keptAsNextRun(state: LaneProjection, drainedIds: ReadonlySet<string>): Drained {
  return {
    inbox: state.inbox.map((item) => (drainedIds.has(item.entryId) ? { ...item, kind: "nextRun" as const } : item)),
    queued: new Map<string, LaneQueuedItem>([...state.queued].map(([id, view]) => [id, drainedIds.has(id) && view.type === "message" ? { ...view, kind: "nextRun" } : view])),
    steer: [],
    followUp: [],
  };
}

/** The lane as requestAbort needs it: its projection, and the gate of a pass live right now. */
export interface AbortTarget {
  readonly name: string;
  readonly state: LaneProjection;
  publish(next: LaneProjection): void;
  liveGate(operationId: string): GateControl | undefined;
}

/**
 * requestAbort (reference §4.4): admission of the live pass closes before the marker is queued
 * (§4.3), the marker commits, and then the pass live *now* is signalled — which may have been
 * installed after this call, its hooks and effects admitted under an open gate (§4.4.3).
 */
export function requestAbort(core: HarnessCore, lane: AbortTarget, operationId: string): Promise<Result<AbortRequestResult>> {
  return requestAbortWith(
    core,
    lane,
    operationId,
    (onMarked) => planRequestAbort(core, lane.name, operationId, onMarked),
    (result) => result.newlyRequested,
  );
}

/**
 * requestAbort's gate protocol around any lane command that commits the cancellation marker of
 * `operationId` (with more writes, for an interrupt: busy-prompts.ts). The planner calls
 * `onMarked` after its commit (as its afterCommit); `newlyMarked` tells whether it committed one.
 */
export async function requestAbortWith<T>(
  core: HarnessCore,
  lane: AbortTarget,
  operationId: string,
  planner: (onMarked: () => void) => Planner<Result<T>>,
  newlyMarked: (value: T) => boolean,
): Promise<Result<T>> {
  let marked!: () => void;
  let failed!: (error: unknown) => void;
  const cancellation = new Promise<void>((resolve, reject) => {
    marked = resolve;
    failed = reject;
  });
  if (lane.state.operation?.meta.operationId === operationId) lane.liveGate(operationId)?.beginAbort(cancellation);
  // No marker committed and none stored (the command refused, e.g. an interrupt whose run cannot
  // be placed, or its commit refused): a pass refused admission meanwhile must go on, not wait on
  // a marker that will never come (reference §4.3: only the marker's commit ends a pass).
  const reopenUnmarked = (): boolean => {
    const current = lane.state.operation;
    if (current?.meta.operationId !== operationId || current.state.control.status === "cancel_requested") return false;
    lane.liveGate(operationId)?.reopen(cancellation);
    return true;
  };
  try {
    const result = await runLaneCommand(core, lane, planner(() => {
      marked();
      const live = lane.liveGate(operationId);
      live?.beginAbort(cancellation);
      live?.signalAbort();
      // The marker is durable; its reconciliation must be too. An operation resting in a durable
      // wait (a client call, a deferred answer, a retry's backoff) has no pass to notice the
      // marker, and a process that dies now has no alarm to come back by: due now starts (or
      // joins) a pass and arms the safety net, as an acceptance does.
      core.wake.due(lane.name, operationId, core.clock());
    }));
    if (!result.ok || !newlyMarked(result.value)) {
      reopenUnmarked();
      marked();
    }
    return result;
  } catch (error) {
    // A refused payload wrote nothing: the pass goes on. Any other failure faulted the harness,
    // which closed the gate, and the pass ends with it.
    if (error instanceof PayloadTooLarge && reopenUnmarked()) marked();
    else failed(error);
    throw error;
  }
}
