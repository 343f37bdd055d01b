import type { HarnessEvent, OperationError, OperationStatus } from "../../../schema/lane.ts";
import type { SessionMutator } from "../../session/mutation.ts";
import type { Write } from "../../session/storage.ts";
import { runLaneCommand, type Committed } from "../lane-command.ts";
import type { LaneProjection } from "../lane-state.ts";
import type { OperationMeta, OperationState } from "../types.ts";
import { CONTINUE, currentOperation, type Pass, type Step } from "./pass.ts";
import { terminalEvent, terminalSuffix } from "./terminal.ts";
import { restrictedTo, startNextPending } from "../pending-runs.ts";

/** The lane fields an operation transition may change besides the operation itself. */
export type LanePatch = Partial<Pick<LaneProjection, "tipId" | "configuration" | "inbox" | "queued">>;

/**
 * One transition decision (reference §4.1): business writes, then either the complete successor
 * state or a terminal outcome (which appends the universal suffix), plus the events it justifies.
 */
export type TransitionPlan =
  | {
      kind: "commit";
      writes: Write[];
      state: OperationState;
      patch?: LanePatch;
      events?: (done: Committed | undefined) => HarnessEvent[];
      afterCommit?: () => void;
    }
  | {
      kind: "finish";
      writes: Write[];
      status: OperationStatus;
      error?: OperationError;
      patch?: LanePatch;
      /** Business events, emitted before the operation's closing event. */
      events?: (done: Committed | undefined) => HarnessEvent[];
      /**
       * The leaf the terminal leaves from when the plan's own writes already moved past the stored
       * one (a response settlement that also finishes): its cleanup follows this leaf, so the
       * settled attempt's frames are not deleted twice.
       */
      from?: OperationState;
    }
  | { kind: "return" };

export type TransitionPlanner = (
  m: SessionMutator,
  operation: { meta: OperationMeta; state: OperationState },
  lane: LaneProjection,
) => TransitionPlan;

/**
 * Ordinary forward progress and intents. Under durable cancellation it commits nothing and does
 * not even call the planner: the caller returns `continue` and the loop reconciles.
 */
export async function continueOperation(pass: Pass, planner: TransitionPlanner): Promise<Step | "cancel_requested" | "returned"> {
  return transition(pass, planner, false);
}

/** Settles already-admitted work; runs even under cancellation and owns the terminal suffix. */
export async function settleOperation(pass: Pass, planner: TransitionPlanner): Promise<Step | "returned"> {
  const result = await transition(pass, planner, true);
  if (result === "cancel_requested") throw new Error("settleOperation never diverts under cancellation");
  return result;
}

/** A transition result as a loop step: diverted or returned transitions just continue the loop. */
export function settled(result: Step | "cancel_requested" | "returned"): Step {
  return typeof result === "string" ? CONTINUE : result;
}

async function transition(pass: Pass, planner: TransitionPlanner, underCancel: boolean): Promise<Step | "cancel_requested" | "returned"> {
  const { core, lane } = pass;
  return runLaneCommand<Step | "cancel_requested" | "returned">(core, lane, (m, state) => {
    const operation = currentOperation(pass);
    const cancelled = operation.state.control.status === "cancel_requested";
    if (cancelled && !underCancel) return { writes: [], value: "cancel_requested" };
    const plan = planner(m, operation, state);
    if (plan.kind === "return") return { writes: [], value: "returned" };
    const patched: LaneProjection = { ...state, ...plan.patch };
    if (plan.kind === "commit") {
      return {
        writes: plan.writes,
        next: { ...patched, operation: { meta: operation.meta, state: plan.state } },
        ...(plan.events && { events: plan.events }),
        ...(plan.afterCommit && { afterCommit: plan.afterCommit }),
        value: CONTINUE,
      };
    }
    // "aborted" iff terminal under cancel_requested (reference §3.8): the marker decides.
    const status: OperationStatus = cancelled ? "aborted" : plan.status;
    const suffix = terminalSuffix(m, { meta: operation.meta, state: plan.from ?? operation.state }, {
      status,
      ...(plan.error && { error: plan.error }),
      tipId: patched.tipId,
      endedAt: core.clock(),
    });
    const idle: LaneProjection = { ...patched, operation: null, lastOperationId: pass.operationId };
    const settling = [...plan.writes, ...suffix.writes];
    // The first pending run starts in the settlement's own commit (pending-runs.ts): never twice,
    // never out of line, and never an idle moment for another prompt to slip in ahead of it.
    const following = startNextPending(core, lane.name, m, idle);
    return {
      writes: [...settling, ...(following?.writes ?? [])],
      next: following?.next ?? idle,
      events: (done) => [
        ...(plan.events?.(following && done ? restrictedTo(done, settling) : done) ?? []),
        terminalEvent(lane.name, suffix.record),
        ...(following?.events?.(done) ?? []),
      ],
      afterCommit: () => {
        core.wake.settled(lane.name, pass.operationId);
        following?.afterCommit?.();
      },
      value: { kind: "settled", record: suffix.record },
    };
  });
}
