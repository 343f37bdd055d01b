import type { InboxKind } from "../../schema/lane.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import type { DeferredMode } from "../../schema/settings.ts";
import { planRequestAbort, requestAbortWith, type AbortRequestResult, type AbortTarget } from "./abort.ts";
import { planRunAcceptance } from "./acceptance.ts";
import type { HarnessCore } from "./core.ts";
import { err, ok, type Result } from "./errors.ts";
import { runLaneCommand, type LanePlan, type Planner } from "./lane-command.ts";
import type { LaneProjection } from "./lane-state.ts";
import { planPendingRun, type PromptAdmission } from "./pending-runs.ts";
import { planEnqueue } from "./queue.ts";

// A prompt that arrives while its lane is busy (spec "Prompt while busy", LangGraph's "double
// texting"): `reject` is the plain acceptance (LaneBusy); `enqueue` makes it a pending run;
// `interrupt` marks the current operation for cancellation and puts the run first in line, in one
// commit, so the settlement of the aborted operation starts it; `steer` and `followUp` hand the
// prompt to the running run's queues (under a compaction or navigation, which takes no input, it
// becomes a pending run). On an idle lane every strategy starts the run.

export type IfBusy = "reject" | "enqueue" | "interrupt" | "steer" | "followUp";

/**
 * What a prompt under `ifBusy` got. `slotNeeded`: a steer or follow-up accepted without an
 * open-operation slot (`withoutSlot`) found no run to hand it to: it would start a run, which the
 * caller must hold a slot for; nothing was written.
 */
export type BusyPromptAnswer =
  | { admission: PromptAdmission; interrupted?: AbortRequestResult }
  | { queued: { operationId: string; entryId: string; entryIds: string[]; kind: Extract<InboxKind, "steer" | "followUp"> } }
  | { slotNeeded: true };

export interface BusyPrompt {
  operationId: string;
  messages: AgentMessage[];
  deferred: DeferredMode | undefined;
  ifBusy: Exclude<IfBusy, "reject">;
  /** Fresh entry ids, one per message, for prompts handed to a queue. */
  entryIds: string[];
  /** The caller holds no open-operation slot: hand the prompt to a running run, or start nothing. */
  withoutSlot?: boolean;
  /** An interrupt with no caller to hand the drained input to: it stays queued for the next run (abort.ts). */
  keepQueuedInput?: boolean;
}

/** One commit (or, for `interrupt`, the abort's gate protocol around one commit). */
export function acceptWhileBusy(core: HarnessCore, lane: AbortTarget, prompt: BusyPrompt): Promise<Result<BusyPromptAnswer>> {
  if (prompt.ifBusy === "interrupt") return interrupt(core, lane, prompt);
  return runLaneCommand(core, lane, planBusyPrompt(core, lane.name, prompt));
}

function planBusyPrompt(core: HarnessCore, lane: string, prompt: BusyPrompt): Planner<Result<BusyPromptAnswer>> {
  return (m, state) => {
    // A steer or follow-up is handed to a run: a compaction or a navigation takes no queued input
    // (its settlement starts nothing), so under one the prompt waits as a pending run instead,
    // answered by its own run once the operation ends.
    const handedToRun = (prompt.ifBusy === "steer" || prompt.ifBusy === "followUp") && state.operation?.meta.intent.kind === "run";
    if (prompt.withoutSlot && !handedToRun) return { writes: [], value: ok({ slotNeeded: true }) };
    if (!state.operation) return started(planRunAcceptance(core, lane, prompt.operationId, prompt.messages, prompt.deferred)(m, state));
    if (!handedToRun) return started(planPendingRun(core, lane, prompt.operationId, prompt.messages, prompt.deferred, "back")(m, state));
    const kind = prompt.ifBusy === "steer" ? "steer" : "followUp";
    if (prompt.messages.length === 0) return { writes: [], value: err({ code: "InvalidMessage", lane, reason: "empty" }) };
    // Each message is one item of that queue, in order; a full queue takes none of them.
    let next: LaneProjection = state;
    let last: LanePlan<Result<{ entryId: string }>> | undefined;
    const writes = [];
    for (const [index, message] of prompt.messages.entries()) {
      const entryId = prompt.entryIds[index];
      if (entryId === undefined) throw new Error("A queued prompt needs one entry id per message");
      last = planEnqueue(lane, { entryId, kind }, { type: "message", payload: message })(m, next);
      if (!last.value.ok) return { writes: [], value: last.value };
      writes.push(...last.writes);
      next = last.next ?? next;
    }
    const entryIds = prompt.entryIds.slice(0, prompt.messages.length);
    return {
      writes,
      next,
      ...(last?.events && { events: last.events }),
      value: ok({ queued: { operationId: state.operation.meta.operationId, entryId: entryIds[0] ?? "", entryIds, kind } }),
    };
  };
}

/** A plan whose value is an admission, answered as one. */
function started(plan: LanePlan<Result<PromptAdmission>>): LanePlan<Result<BusyPromptAnswer>> {
  return { ...plan, value: plan.value.ok ? ok({ admission: plan.value.value }) : plan.value };
}

/**
 * Interrupt: the cancellation marker of the current operation and the run first in line, in one
 * commit (a crash leaves both or neither); the aborted operation's settlement starts the run.
 * An idle lane starts it at once. Idle or busy is decided on the line: an operation accepted
 * ahead of the interrupt there is the one it interrupts.
 */
async function interrupt(core: HarnessCore, lane: AbortTarget, prompt: BusyPrompt): Promise<Result<BusyPromptAnswer>> {
  for (;;) {
    const current = lane.state.operation?.meta.operationId;
    if (current === undefined) {
      const accepted = await runLaneCommand<Result<BusyPromptAnswer | typeof MOVED>>(core, lane, (m, state) =>
        state.operation ? { writes: [], value: ok(MOVED) } : planBusyPrompt(core, lane.name, prompt)(m, state),
      );
      if (!accepted.ok) return accepted;
      if (accepted.value !== MOVED) return ok(accepted.value);
      continue;
    }
    const answer = await requestAbortWith<BusyPromptAnswer | typeof MOVED>(
      core,
      lane,
      current,
      (onMarked) => (m, state) => {
        // The lane moved on before the line was ours: look again (the gate protocol is per operation).
        if (state.operation?.meta.operationId !== current) return { writes: [], value: ok(MOVED) };
        const abort = planRequestAbort(core, lane.name, current, onMarked, prompt.keepQueuedInput === true)(m, state);
        if (!abort.value.ok) return { writes: [], value: abort.value };
        const pending = planPendingRun(core, lane.name, prompt.operationId, prompt.messages, prompt.deferred, "front")(m, abort.next ?? state);
        if (!pending.value.ok) return { writes: [], value: pending.value };
        const next = pending.next ?? abort.next;
        return {
          writes: [...abort.writes, ...pending.writes],
          ...(next && { next }),
          ...(abort.events && { events: abort.events }),
          ...(abort.afterCommit && { afterCommit: abort.afterCommit }),
          value: ok({ admission: pending.value.value, interrupted: abort.value.value }),
        };
      },
      (value) => value !== MOVED && "admission" in value && value.interrupted?.newlyRequested === true,
    );
    if (!answer.ok) return answer;
    if (answer.value !== MOVED) return ok(answer.value);
  }
}

/** The planner's answer when the current operation changed before it ran. */
const MOVED = Symbol("moved");
