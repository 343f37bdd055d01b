import type { AgentMessage } from "../../schema/messages.ts";
import { pendingEntry } from "../session/builtin-addresses.ts";
import { deleteValue } from "../session/writes.ts";
import { queueUpdate } from "./acceptance.ts";
import type { HarnessCore } from "./core.ts";
import { err, ok, type Result } from "./errors.ts";
import type { Planner } from "./lane-command.ts";
import { stateWrites } from "./operation-codec.ts";
import { queueView } from "./lane-state.ts";
import type { OperationState } from "./types.ts";

export interface AbortRequestResult {
  operationId: string;
  newlyRequested: boolean;
  steer: AgentMessage[];
  followUp: AgentMessage[];
}

/**
 * requestAbort's one commit (reference §4.4): the cancellation marker, and every steer and
 * followUp item drained with its payload returned. nextRun and write items stay queued. The
 * marker commit, the bound events and the gate signal all happen before the line is released
 * (D14.3); a stale id cancels nothing.
 */
export function planRequestAbort(core: HarnessCore, lane: string, operationId: string, onMarked: () => void): Planner<Result<AbortRequestResult>> {
  return (m, state) => {
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
    const messagesOf = (kind: "steer" | "followUp") =>
      drained.flatMap((item) => {
        const view = state.queued.get(item.entryId);
        return item.kind === kind && view?.type === "message" ? [view.message] : [];
      });
    const steer = messagesOf("steer");
    const followUp = messagesOf("followUp");
    const inbox = state.inbox.filter((item) => !drainedIds.has(item.entryId));
    const queued = new Map([...state.queued].filter(([id]) => !drainedIds.has(id)));
    const next: OperationState = { ...current.state, control: { status: "cancel_requested", requestedAt: core.clock() } };
    return {
      writes: [...stateWrites(m, core.captures, operationId, next, current.state), ...drained.map((item) => deleteValue(pendingEntry(item.entryId)))],
      next: { ...state, inbox, queued, operation: { meta: current.meta, state: next } },
      events: () => [
        { type: "operation_abort", lane, operationId, steer, followUp },
        ...(drained.length > 0 ? [queueUpdate(lane, queueView({ inbox, queued }))] : []),
      ],
      afterCommit: onMarked,
      value: ok({ operationId, newlyRequested: true, steer, followUp }),
    };
  };
}
