import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import type { HarnessEvent } from "../../../../schema/lane.ts";
import type { Usage } from "../../../../schema/usage.ts";
import type { SummaryRequestKind } from "../../../compaction/summarizer.ts";
import type { ProviderModel } from "../../../execution/models.ts";
import { boundedErrorText, isTransientFailure, providerFailureOf, providerUnavailable, retryDelayFor } from "../../../execution/provider-failure.ts";
import { providerRefusalOf } from "../../../execution/provider-refusal.ts";
import { addUsage } from "../../../session/usage.ts";
import { insertUsage } from "../../../session/writes.ts";
import type { Committed } from "../../lane-command.ts";
import { normalizeRetryPolicy, notBeforeOf, retryDelay } from "../../settings.ts";
import type { OperationState, StateAt, SummaryContext, SummaryTask } from "../../types.ts";
import { untilNotBefore } from "../assistant/retry-wait.ts";
import { CONTINUE, type Pass, type Step } from "../pass.ts";
import { scopeOf } from "../scope.ts";
import { boundaryPlan, usageEvents, type SummaryOutcome, type SummaryResult, type SummarySettlement } from "./boundary.ts";
import { readBranchPreparation, readCompactionPreparation, summaryWork, type SummaryWork } from "./source.ts";
import { requestSummary, summaryRequestOptions, summaryText } from "./request.ts";
import { continueOperation, settled, settleOperation, type TransitionPlan } from "../transition.ts";

// The summary leaves (reference §3.3–3.4, §4.6), one procedure per leaf, each straight-line:
// prepare → commit intent → admit the effect → commit its settlement. How the outcome ends the
// task is the boundary switch of boundary.ts.

/**
 * `summary.deciding`: the gated `before_compaction` (or, for a summarized navigation,
 * `before_navigation`) over the reconstructed preparation. A decline or a hook-supplied result goes
 * to the boundary (with the hook's usage row, if it gave usage); neither selects generation
 * (`summary.ready`, a fresh result id, the context snapshot). A crash before this commit reruns
 * the hook (it is transition-consumed).
 */
export async function decideSummary(pass: Pass, state: StateAt<"summary.deciding">): Promise<Step> {
  const { core } = pass;
  const { task } = state;
  const decision = await structuralDecision(pass, task, state);
  const resultEntryId = core.ids.next();
  return settled(
    await continueOperation(pass, (_m, operation, lane): TransitionPlan => {
      switch (decision.decision) {
        case "decline":
          return boundaryPlan(pass, task, operation.state, lane, { kind: "declined" });
        case "result": {
          const { result } = decision;
          const usageId = core.ids.next();
          const usage = result.usage;
          const settlement: SummarySettlement = usage
            ? { writes: [insertUsage({ id: usageId, usage, entryId: resultEntryId, adjustment: false, details: { source: decision.hook } })], events: (done) => usageEvents(pass.lane.name, done) }
            : { writes: [] };
          return boundaryPlan(pass, task, operation.state, lane, { kind: "success", result, fromHook: true, resultEntryId }, settlement);
        }
        case "generate": {
          const settings = core.settings();
          const summaryContext: SummaryContext = {
            resultEntryId,
            configuration: lane.configuration,
            streamOptions: { ...settings.streamOptions, deferred: false },
            retryPolicy: normalizeRetryPolicy(settings.retry),
          };
          return { kind: "commit", writes: [], state: { ...scopeOf(operation.state), at: "summary.ready", task, summaryContext, nextAttempt: 1 } };
        }
      }
    }),
  );
}

type StructuralOutcome = { decision: "generate" } | { decision: "decline" } | { decision: "result"; hook: "before_compaction" | "before_navigation"; result: SummaryResult };

/** The deciding hook of the task's algorithm, when one is registered; its result as the boundary takes it. */
async function structuralDecision(pass: Pass, task: SummaryTask, state: OperationState): Promise<StructuralOutcome> {
  const { core } = pass;
  const scope = { lane: pass.lane.name, runId: pass.operationId, ...(task.customInstructions !== undefined && { customInstructions: task.customInstructions }) };
  if (task.boundary.kind === "commit_navigation") {
    const { targetId } = task.boundary;
    if (!core.hooks.has("before_navigation") || targetId === null) return { decision: "generate" };
    const preparation = readBranchPreparation(pass, task);
    const decided = await pass.gate.admit((signal) => core.hooks.runBeforeNavigation({ ...scope, targetId, preparation }, { signal }));
    if (decided.decision !== "result") return decided;
    const { summary, usage, readFiles, modifiedFiles } = decided.result;
    return { decision: "result", hook: "before_navigation", result: { kind: "branch_summary", summary, details: { readFiles, modifiedFiles }, ...(usage && { usage }) } };
  }
  if (!core.hooks.has("before_compaction")) return { decision: "generate" };
  const preparation = readCompactionPreparation(pass, task, state);
  const decided = await pass.gate.admit((signal) => core.hooks.runBeforeCompaction({ ...scope, reason: task.reason ?? "manual", preparation }, { signal }));
  if (decided.decision !== "result") return decided;
  return { decision: "result", hook: "before_compaction", result: { kind: "compaction", ...decided.result } };
}

/**
 * `summary.ready`: the captured model must resolve (else the boundary fails `model_unavailable`);
 * the first nested request is prepared, its usage intent committed (`summary.effect_pending`), and
 * the attempt performed in this same pass.
 */
export async function summaryReady(pass: Pass, state: StateAt<"summary.ready">): Promise<Step> {
  const { core } = pass;
  const { task, summaryContext } = state;
  const { provider, modelId } = summaryContext.configuration.model;
  const model = core.models.getModel(provider, modelId);
  if (!model) {
    const error = { code: "model_unavailable", message: `Model ${provider}/${modelId} is not available` };
    return settled(await continueOperation(pass, (_m, operation, lane) => boundaryPlan(pass, task, operation.state, lane, { kind: "failed", error })));
  }
  const work = summaryWork(pass, task, state);
  const attempt = state.nextAttempt;
  const options = await summaryRequestOptions(pass, model, summaryContext, attempt, state.settings.compaction.reserveTokens, stepOf(task));
  const usageId = core.ids.next();
  const effect: StateAt<"summary.effect_pending"> = { ...scopeOf(state), at: "summary.effect_pending", task, summaryContext, attempt, request: { index: 0, usageId }, usageIds: [] };
  const intent = await continueOperation(pass, () => ({ kind: "commit", writes: [], state: effect }));
  if (intent !== CONTINUE) return settled(intent);
  return performAttempt(pass, effect, model, work, options);
}

/**
 * The attempt (in `summary.effect_pending`): each nested request is admitted, then settles its own
 * usage row before the next starts (that commit is also the next request's intent). The last
 * settlement carries the boundary; a failure retries while attempts remain, else fails the task.
 */
async function performAttempt(
  pass: Pass,
  first: StateAt<"summary.effect_pending">,
  model: ProviderModel,
  work: SummaryWork,
  firstOptions: Awaited<ReturnType<typeof summaryRequestOptions>>,
): Promise<Step> {
  const { requests } = work;
  const { core } = pass;
  const lane = pass.lane.name;
  const { task, summaryContext, attempt } = first;
  const texts: { kind: SummaryRequestKind; text: string }[] = [];
  let usage: Usage | undefined;
  let current = first;
  for (let index = 0; index < requests.length; index++) {
    const request = requests[index];
    const reserved = current.request;
    if (!request || !reserved) throw new Error("Invariant: a summary request without its usage intent");
    const options = index === 0 ? firstOptions : await summaryRequestOptions(pass, model, summaryContext, attempt, current.settings.compaction.reserveTokens, stepOf(task));
    const response = await requestSummary(pass, model, request.context, options);
    usage = usage ? addUsage(usage, response.usage) : response.usage;
    const settlement: SummarySettlement = {
      writes: [insertUsage({ id: reserved.usageId, usage: response.usage, entryId: summaryContext.resultEntryId, adjustment: false, details: { step: stepOf(task), request: request.kind, attempt } })],
      events: (done) => usageEvents(lane, done),
    };
    const failed = response.stopReason === "error" || response.stopReason === "aborted";
    if (!failed) texts.push({ kind: request.kind, text: summaryText(response) });
    const last = index === requests.length - 1;
    const next: StateAt<"summary.effect_pending"> | undefined =
      !failed && !last ? { ...current, request: { index: index + 1, usageId: core.ids.next() }, usageIds: [...current.usageIds, reserved.usageId] } : undefined;
    const total = usage;
    const step = await settleOperation(pass, (_m, operation, laneState): TransitionPlan => {
      if (failed || operation.state.control.status === "cancel_requested") return failure(pass, task, operation.state, laneState, response, settlement, attempt);
      if (next) return { kind: "commit", writes: settlement.writes, state: { ...next, control: operation.state.control }, ...(settlement.events && { events: settlement.events }) };
      const outcome: SummaryOutcome = { kind: "success", fromHook: false, resultEntryId: summaryContext.resultEntryId, result: work.result(texts, total) };
      return boundaryPlan(pass, task, operation.state, laneState, outcome, withRetryEnd(pass, task, settlement, attempt, true));
    });
    if (step === "returned") throw new Error("Invariant: a summary settlement always commits");
    if (!next || step.kind !== "continue") return step;
    current = next;
  }
  throw new Error("Invariant: a compaction attempt has at least one request");
}

/** A failed request: retry while the error is retryable and attempts remain, else the boundary fails. */
function failure(
  pass: Pass,
  task: SummaryTask,
  current: OperationState,
  lane: Parameters<typeof boundaryPlan>[3],
  response: ProviderAssistant,
  settlement: SummarySettlement,
  attempt: number,
): TransitionPlan {
  if (current.at !== "summary.effect_pending") throw new Error(`Cannot settle a summary request at ${current.at}`);
  const errorMessage = boundedErrorText(response.errorMessage ?? "The summary request failed");
  // Under cancellation the boundary ends the task aborted (settling this request's usage row).
  if (current.control.status === "cancel_requested") return boundaryPlan(pass, task, current, lane, { kind: "failed", error: { code: "aborted", message: errorMessage } }, settlement);
  const failure = providerFailureOf(response);
  const transient = isTransientFailure(response, failure);
  const policy = current.summaryContext.retryPolicy;
  if (transient && attempt < policy.maxAttempts) {
    return retryPlan(pass, current, settlement, retryDelayFor(failure, retryDelay(policy, attempt)), errorMessage, false);
  }
  // A request the service would not send or follow fails as a run's does (assistant/settle-response.ts).
  const code = providerRefusalOf(response) ? "provider_error" : failure?.kind === "auth" ? "provider_auth" : "summary_error";
  const error = transient ? providerUnavailable(response.provider, failure, attempt, errorMessage) : { code, message: errorMessage };
  return boundaryPlan(pass, task, current, lane, { kind: "failed", error }, withRetryEnd(pass, task, settlement, attempt, false, errorMessage));
}

function retryPlan(
  pass: Pass,
  current: StateAt<"summary.effect_pending">,
  settlement: SummarySettlement,
  delayMs: number,
  errorMessage: string,
  recovery: boolean,
): TransitionPlan {
  const lane = pass.lane.name;
  const runId = pass.operationId;
  const nextAttempt = current.attempt + 1;
  const notBefore = notBeforeOf(pass.core.clock(), delayMs);
  const maxAttempts = current.summaryContext.retryPolicy.maxAttempts;
  return {
    kind: "commit",
    writes: settlement.writes,
    state: { ...scopeOf(current), at: "summary.retry_wait", task: current.task, summaryContext: current.summaryContext, nextAttempt, notBefore, errorMessage },
    events: (done) => [
      ...(settlement.events?.(done) ?? []),
      { type: "retry_scheduled", lane, runId, step: stepOf(current.task), attempt: nextAttempt, maxAttempts, delayMs, notBefore, errorMessage, ...(recovery && { recovery: true as const }) },
    ],
    afterCommit: () => pass.core.wake.due(lane, runId, notBefore),
  };
}

function withRetryEnd(pass: Pass, task: SummaryTask, settlement: SummarySettlement, attempt: number, success: boolean, finalError?: string): SummarySettlement {
  if (attempt <= 1) return settlement;
  const end: HarnessEvent = { type: "retry_end", lane: pass.lane.name, runId: pass.operationId, step: stepOf(task), attempt, success, ...(finalError !== undefined && { finalError }) };
  return { writes: settlement.writes, events: (done: Committed | undefined) => [...(settlement.events?.(done) ?? []), end] };
}

export const INTERRUPTED_SUMMARY_MESSAGE =
  "The summary request was interrupted before its outcome was recorded; whether the provider completed it is unknown.";

/**
 * A restored `summary.effect_pending` (reference §4.6): the whole attempt is uncertain, even a
 * first split-turn request that finished (its text lived only in memory). Attempts left → the
 * retry wait (`recovery: true`); none → the boundary fails `structural_interrupted`. Usage rows
 * already committed stay; nothing is fabricated for the unknown request.
 */
export async function recoverSummary(pass: Pass, state: StateAt<"summary.effect_pending">): Promise<Step> {
  const policy = state.summaryContext.retryPolicy;
  return settled(
    await continueOperation(pass, (_m, operation, lane): TransitionPlan => {
      if (operation.state.at !== "summary.effect_pending") throw new Error(`Cannot recover a summary at ${operation.state.at}`);
      if (state.attempt < policy.maxAttempts) {
        return retryPlan(pass, operation.state, { writes: [] }, retryDelay(policy, state.attempt), INTERRUPTED_SUMMARY_MESSAGE, true);
      }
      const error = { code: "structural_interrupted", message: INTERRUPTED_SUMMARY_MESSAGE };
      return boundaryPlan(pass, state.task, operation.state, lane, { kind: "failed", error });
    }),
  );
}

/** `summary.retry_wait` → `summary.ready`, like the assistant's wait (a durable wait or a gated timer). */
export async function summaryRetryWait(pass: Pass, state: StateAt<"summary.retry_wait">): Promise<Step> {
  const waiting = await untilNotBefore(pass, state.notBefore);
  if (waiting) return waiting;
  return settled(
    await continueOperation(pass, (_m, operation) => ({
      kind: "commit",
      writes: [],
      state: { ...scopeOf(operation.state), at: "summary.ready", task: state.task, summaryContext: state.summaryContext, nextAttempt: state.nextAttempt },
      events: () => [{ type: "retry_start", lane: pass.lane.name, runId: pass.operationId, step: stepOf(state.task), attempt: state.nextAttempt }],
    })),
  );
}

/** The `before_request` step (and usage detail) of a task's structural requests. */
function stepOf(task: SummaryTask): "compaction" | "branch_summary" {
  return task.boundary.kind === "commit_navigation" ? "branch_summary" : "compaction";
}
