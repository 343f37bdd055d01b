import type { NewEntry } from "../../../../schema/entries.ts";
import type { HarnessEvent, LaneQueuedItem } from "../../../../schema/lane.ts";
import { projects } from "../../../execution/context.ts";
import type { StoredCompactionPreparation } from "../../../compaction/preparation.ts";
import { branchTip, operationPreparation, pendingEntry } from "../../../session/builtin-addresses.ts";
import type { Write } from "../../../session/storage.ts";
import { deleteValue, insertEntry, setValue } from "../../../session/writes.ts";
import { placementEvents, queueUpdate } from "../../acceptance.ts";
import type { HarnessCore } from "../../core.ts";
import { selectEligible } from "../../inbox.ts";
import type { Committed } from "../../lane-command.ts";
import { entryOfQueued, queueView, type LaneProjection } from "../../lane-state.ts";
import type { OperationScope, OperationState, StateAt, SummaryTask } from "../../types.ts";
import type { Pass, Step } from "../pass.ts";
import { contextMessages } from "../assistant/request.ts";
import { generationContext, scopeOf } from "../scope.ts";
import { probeThreshold, type ThresholdCandidate } from "./threshold.ts";
import { continueOperation, settled, type LanePatch, type TransitionPlan } from "../transition.ts";

/**
 * The boundary planner (reference §3.6): one decision, at most one commit, never back into
 * `checkpoint`. The threshold probe reads off the line; then placed projecting input wins (steer
 * semantics), a threshold candidate opens `summary.deciding{threshold}`, `need_assistant`
 * continues, and a run that may finish goes through three-phase finish mediation around
 * `before_run_end`.
 */
export async function boundary(pass: Pass, state: StateAt<"checkpoint">): Promise<Step> {
  const { core } = pass;
  if (state.continuation.kind === "may_finish" && state.continuation.includeFinalAssistant && state.latestAssistantEntryId === null) {
    throw new Error("Invariant: a finish that includes the final assistant needs one");
  }
  const candidate = state.thresholdDone ? undefined : probeThreshold(pass, state, state.triggerEntryId);
  let planned: string[] | undefined;
  const decided = await continueOperation(pass, (_m, operation, lane) => {
    const decision = decideOnLine(core, pass, lane, operation.state, state, candidate);
    if (decision.kind === "plan") return decision.plan;
    planned = decision.placed;
    return { kind: "return" };
  });
  if (decided !== "returned") return settled(decided);

  // Finish mediation, phase (b): the gated hook runs off the line over the bounded context.
  const messages = contextMessages(pass);
  const { followUp } = await pass.gate.admit((signal) =>
    core.hooks.runBeforeRunEnd({ lane: pass.lane.name, runId: pass.operationId, messages }, { signal }),
  );

  // Phase (c): back on the line, replan from current state; stale hook output is dropped.
  return settled(
    await continueOperation(pass, (_m, operation, lane): TransitionPlan => {
      const placement = place(core, pass.lane.name, pass.operationId, lane, operation.state, true);
      const ready = readyFor(core, placement, state, operation.state);
      if (ready) return ready;
      const unchanged = planned !== undefined && sameIds(planned, placement.ids);
      if (unchanged && followUp !== undefined) {
        const id = core.ids.next();
        const entry: NewEntry = { id, parentId: placement.tipId, type: "message", message: { role: "user", content: followUp, timestamp: core.clock() } };
        const writes: Write[] = [...placement.writes.filter((write) => write.kind !== "value" || write.namespace !== "pi.branch.tip"), insertEntry(entry), setValue(branchTip(pass.lane.name), id)];
        const events = (done: Committed | undefined): HarnessEvent[] => [
          ...placement.events(done),
          ...placementEvents(pass.lane.name, pass.operationId, (done?.entries ?? []).filter((added) => added.id === id)),
        ];
        return commitReady(core, { ...placement, writes, tipId: id, events }, operation.state, id, false);
      }
      return finishPlan(placement);
    }),
  );
}

/**
 * Phase (a) of the boundary, on the line: the plan when the decision needs no off-line work
 * (`assistant.ready`, or a finish when no `before_run_end` handler exists), else the ids the
 * mediation's phase (c) compares against. Settlement and start commits call it too, so that the
 * common turn carries its boundary decision in its own commit (QUALITY P2/P3): the durable
 * outcome equals committing `checkpoint` and deciding at once, with no state in between to lose.
 */
export function decideOnLine(
  core: HarnessCore,
  pass: Pass,
  lane: LaneProjection,
  current: OperationState,
  checkpoint: Pick<StateAt<"checkpoint">, "continuation" | "triggerEntryId">,
  /** The probe's candidate (threshold.ts); stale when the tip moved since it read the path. */
  probed?: ThresholdCandidate,
): { kind: "plan"; plan: TransitionPlan } | { kind: "mediate"; placed: string[] } {
  const candidate = probed?.stored.tipId === lane.tipId ? probed : undefined;
  // followUp input is eligible only when the run may finish and no threshold compaction is due.
  const placement = place(core, pass.lane.name, pass.operationId, lane, current, checkpoint.continuation.kind === "may_finish" && !candidate);
  const ready = placement.projecting.length > 0 || !candidate ? readyFor(core, placement, checkpoint, current) : undefined;
  if (ready) return { kind: "plan", plan: ready };
  if (candidate) return { kind: "plan", plan: thresholdPlan(pass, placement, checkpoint, current, candidate) };
  // Without a before_run_end handler there is nothing to mediate: finish now, reading no context.
  if (!core.hooks.has("before_run_end")) return { kind: "plan", plan: finishPlan(placement) };
  return { kind: "mediate", placed: placement.ids };
}

interface Placement {
  /** The lane before this placement (its configuration is what a generation captures). */
  lane: LaneProjection;
  ids: string[];
  writes: Write[];
  tipId: string | null;
  patch: LanePatch;
  projecting: LaneQueuedItem[];
  events: (done: Committed | undefined) => HarnessEvent[];
}

/** Selects and chains the boundary's eligible items (write + steer; followUp only at may_finish). */
function place(core: HarnessCore, lane: string, runId: string, state: LaneProjection, scope: OperationScope, mayFinish: boolean): Placement {
  const viewsOf = (ids: readonly { entryId: string }[]) => ids.flatMap((item) => state.queued.get(item.entryId) ?? []);
  const projectsView = (view: LaneQueuedItem) => projects(view.type === "message" ? { type: "message" } : view, core.projectors);
  let selection = selectEligible(state.inbox, { write: true, steer: scope.settings.steeringMode });
  if (mayFinish && !viewsOf(selection.selected).some(projectsView)) {
    selection = selectEligible(state.inbox, { write: true, steer: scope.settings.steeringMode, followUp: scope.settings.followUpMode });
  }
  const views = viewsOf(selection.selected);
  const entries: NewEntry[] = [];
  let tipId = state.tipId;
  for (const view of views) {
    entries.push(entryOfQueued(view, tipId));
    tipId = view.entryId;
  }
  const placedIds = new Set(views.map((view) => view.entryId));
  const inbox = selection.remainder;
  const queued = new Map([...state.queued].filter(([id]) => !placedIds.has(id)));
  const writes: Write[] =
    views.length === 0
      ? []
      : [...entries.map(insertEntry), ...views.map((view) => deleteValue(pendingEntry(view.entryId))), setValue(branchTip(lane), tipId)];
  return {
    lane: state,
    ids: views.map((view) => view.entryId),
    writes,
    tipId,
    patch: views.length === 0 ? {} : { tipId, inbox, queued },
    projecting: views.filter(projectsView),
    events: (done) => [
      // Only its own entries: a settlement or start commit that carries this decision places others.
      ...placementEvents(lane, runId, (done?.entries ?? []).filter((entry) => placedIds.has(entry.id))),
      ...(views.length > 0 ? [queueUpdate(lane, queueView({ inbox, queued }))] : []),
    ],
  };
}

/** `assistant.ready` when projecting input was placed or the run needs an assistant; else none. */
function readyFor(
  core: HarnessCore,
  placement: Placement,
  checkpoint: Pick<StateAt<"checkpoint">, "continuation" | "triggerEntryId">,
  current: OperationState,
): TransitionPlan | undefined {
  const newest = placement.projecting[placement.projecting.length - 1];
  if (newest) return commitReady(core, placement, current, newest.entryId, false);
  if (checkpoint.continuation.kind === "need_assistant") {
    return commitReady(core, placement, current, checkpoint.triggerEntryId, checkpoint.continuation.overflowRecoveryUsed);
  }
  return undefined;
}

function commitReady(core: HarnessCore, placement: Placement, current: OperationState, trigger: string, overflowRecoveryUsed: boolean): TransitionPlan {
  return {
    kind: "commit",
    writes: placement.writes,
    state: { ...scopeOf(current), at: "assistant.ready", generationContext: generationContext(core, placement.lane, trigger, overflowRecoveryUsed, current.settings), nextAttempt: 1 },
    patch: { ...placement.patch, tipId: placement.tipId },
    events: placement.events,
  };
}

/**
 * A threshold candidate with nothing projecting placed: the preparation and
 * `summary.deciding{threshold, resume_checkpoint}` commit with any non-projecting placements.
 * The compaction it publishes resumes this boundary's continuation and trigger.
 */
function thresholdPlan(
  pass: Pass,
  placement: Placement,
  checkpoint: Pick<StateAt<"checkpoint">, "continuation" | "triggerEntryId">,
  current: OperationState,
  candidate: ThresholdCandidate,
): TransitionPlan {
  const { core } = pass;
  const lane = pass.lane.name;
  const runId = pass.operationId;
  const startedAt = core.clock();
  const task: SummaryTask = {
    taskId: candidate.taskId,
    reason: "threshold",
    boundary: { kind: "resume_checkpoint", resumeAfter: { continuation: checkpoint.continuation, triggerEntryId: checkpoint.triggerEntryId } },
  };
  return {
    kind: "commit",
    writes: [...placement.writes, setValue(operationPreparation<StoredCompactionPreparation>(runId, candidate.taskId), candidate.stored)],
    state: { ...scopeOf(current), at: "summary.deciding", task },
    patch: { ...placement.patch, tipId: placement.tipId },
    events: (done) => [...placement.events(done), { type: "compaction_start", lane, runId, reason: "threshold", startedAt }],
  };
}

function finishPlan(placement: Placement): TransitionPlan {
  return { kind: "finish", writes: placement.writes, status: "completed", patch: placement.patch, events: placement.events };
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, index) => id === b[index]);
}
