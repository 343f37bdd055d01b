import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import { isContextOverflow, isRecoverableLength } from "@earendil-works/pi-ai/utils/overflow";
import { isTransientFailure, providerFailureOf, providerUnavailable, retryDelayFor } from "../../../execution/provider-failure.ts";
import { providerRefusalOf } from "../../../execution/provider-refusal.ts";
import type { HarnessEvent } from "../../../../schema/lane.ts";
import type { AssistantMessage, ToolResultMessage } from "../../../../schema/messages.ts";
import { findCut, pathContext, preparationAt, storedPreparation, type StoredCompactionPreparation } from "../../../compaction/preparation.ts";
import { operationPreparation } from "../../../session/builtin-addresses.ts";
import { followerId } from "../../../session/ids.ts";
import { setValue } from "../../../session/writes.ts";
import { notBeforeOf, retryDelay } from "../../settings.ts";
import type { OperationState, StateAt, ToolCallState } from "../../types.ts";
import type { Write } from "../../../session/storage.ts";
import type { LaneProjection } from "../../lane-state.ts";
import { decideOnLine } from "../run/checkpoint.ts";
import type { Pass, Step } from "../pass.ts";
import { scopeOf } from "../scope.ts";
import { thresholdPossibleAfter } from "../run/threshold.ts";
import { suspension, validHandle } from "../deferred/suspension.ts";
import { settledResponse, storedAssistant } from "./response.ts";
import { settleOperation, type TransitionPlan } from "../transition.ts";

/**
 * Settles one assistant attempt (reference §3.5): one transaction commits the response entry, its
 * usage row under the reserved id, the tip, the frame-list delete and exactly one successor,
 * chosen by the first matching classification. Runs even under cancellation.
 */
export async function settleResponse(
  pass: Pass,
  response: ProviderAssistant,
  /** `framed`: progress frames may exist for this attempt (always true for a recovered one). */
  options: { recovery: boolean; framed: boolean },
): Promise<Step> {
  const step = await settleOperation(pass, (m, operation, laneState) => {
    const state = operation.state;
    if (state.at !== "assistant.effect_pending") throw new Error(`Cannot settle a response at ${state.at}`);
    const cancelled = state.control.status === "cancel_requested";
    if (!cancelled && response.stopReason === "aborted") {
      throw new Error("Invariant: an aborted response under running control");
    }
    const now = pass.core.clock();
    const lane = pass.lane.name;
    const runId = pass.operationId;
    const R = state.responseEntryId;
    const message: AssistantMessage = normalize(response, cancelled, state);
    const scope = { ...scopeOf(state), latestAssistantEntryId: R };
    const { writes, events: baseEvents } = settledResponse(pass, m, { responseEntryId: R, usageId: state.usageId, parentId: laneState.tipId, message }, options);
    const turnId = state.generationContext.stepId;
    const attempt = state.attempt;
    const turnEnd: HarnessEvent = { type: "turn_end", lane, runId, turnId, message, toolResults: [] as ToolResultMessage[] };
    const retryEnd = (success: boolean): HarnessEvent[] =>
      attempt > 1
        ? [{ type: "retry_end", lane, runId, step: "assistant", attempt, success, ...(!success && message.errorMessage ? { finalError: message.errorMessage } : {}) }]
        : [];
    const patch = { tipId: R };
    // The leaf a settled response stands at: a finish in this commit leaves from it (its frames
    // are this commit's own business, not the terminal's).
    const atBoundary: StateAt<"checkpoint"> = { ...scope, at: "checkpoint", continuation: { kind: "may_finish", includeFinalAssistant: true }, triggerEntryId: R };

    // 1. Durable cancellation: the response is settled as aborted; the loop then reconciles.
    if (cancelled) {
      return commit(writes, { ...scope, at: "checkpoint", continuation: { kind: "may_finish", includeFinalAssistant: true }, triggerEntryId: R }, patch, (done) => [...baseEvents(done), ...retryEnd(false), turnEnd]);
    }
    // 2. Context overflow, before retryability: one overflow compaction per recovery cycle, then
    //    the same trigger again; a second overflow, nothing to summarize, or compaction disabled
    //    (D14.7) fails the run.
    if (isContextOverflow(response, state.contextWindow) || isRecoverableLength(response, state.intendedOutputLimit)) {
      const overflow = overflowCompaction(pass, state);
      if (overflow) {
        return commit([...writes, ...overflow.writes], overflow.state, patch, (done) => [...baseEvents(done), ...retryEnd(false), turnEnd, overflow.start]);
      }
      return finish(writes, patch, atBoundary, { code: "context_overflow", message: message.errorMessage ?? "The request exceeded the model's context window" }, (done) => [...baseEvents(done), ...retryEnd(false), turnEnd]);
    }
    // 3. A deferred response with a handle this run can poll suspends it (§3.11); an invalid
    //    handle was normalized to an error above and fails the run below.
    const handle = response.stopReason === "deferred" ? validHandle(response, state.generationContext.configuration.model) : undefined;
    if (handle) {
      const { stepId, configuration, streamOptions } = state.generationContext;
      const suspended = suspension(pass, scope, { stepId, configuration, streamOptions, poll: 0 }, R, handle);
      return {
        kind: "commit",
        writes,
        state: suspended.state,
        patch,
        events: (done) => [...baseEvents(done), ...retryEnd(true), turnEnd, suspended.event],
        afterCommit: suspended.afterCommit,
      };
    }
    // 4. Errors: retry while attempts remain and the error is retryable (a recovered unknown
    //    outcome always counts as retryable).
    if (message.stopReason === "error") {
      // A request the service would not make or follow (provider-refusal.ts): no retry helps.
      if (!options.recovery && providerRefusalOf(response)) {
        return finish(writes, patch, atBoundary, { code: "provider_error", message: message.errorMessage ?? "The provider request was refused" }, (done) => [...baseEvents(done), ...retryEnd(false), turnEnd]);
      }
      // The Models port's classification (provider-failure.ts): refused credentials fail at once,
      // and a provider's Retry-After lengthens the wait.
      const failure = options.recovery ? undefined : providerFailureOf(response);
      if (failure?.kind === "auth") {
        return finish(writes, patch, atBoundary, { code: "provider_auth", message: message.errorMessage ?? `Provider ${failure.provider} refused the credentials` }, (done) => [...baseEvents(done), ...retryEnd(false), turnEnd]);
      }
      const transient = !options.recovery && isTransientFailure(response, failure);
      const retryable = options.recovery || transient;
      const policy = state.generationContext.retryPolicy;
      if (retryable && attempt < policy.maxAttempts) {
        const delayMs = retryDelayFor(failure, retryDelay(policy, attempt));
        const notBefore = notBeforeOf(now, delayMs);
        const errorMessage = message.errorMessage ?? "The provider request failed";
        return {
          kind: "commit",
          writes,
          state: { ...scope, at: "assistant.retry_wait", generationContext: state.generationContext, nextAttempt: attempt + 1, notBefore, errorMessage },
          patch,
          events: (done) => [
            ...baseEvents(done),
            { type: "retry_scheduled", lane, runId, step: "assistant", attempt: attempt + 1, maxAttempts: policy.maxAttempts, delayMs, notBefore, errorMessage, ...(options.recovery ? { recovery: true as const } : {}) },
          ],
          afterCommit: () => pass.core.wake.due(lane, runId, notBefore),
        };
      }
      // Out of attempts on a provider that never answered is not a bad answer (QUALITY R8).
      const errorText = message.errorMessage ?? "The provider request failed";
      const error = transient ? providerUnavailable(message.provider, failure, attempt, errorText) : { code: "assistant_error", message: errorText };
      return finish(writes, patch, atBoundary, error, (done) => [...baseEvents(done), ...retryEnd(false), turnEnd]);
    }
    // 5. Tool calls: a batch of planned calls under follower ids of the response.
    const calls: ToolCallState[] = message.content.flatMap((block, sourceIndex) =>
      block.type === "toolCall" ? [{ sourceIndex, resultEntryId: followerId(pass.core.ids, R), status: "planned" as const }] : [],
    );
    if (calls.length > 0) {
      const batch = { assistantEntryId: R, configuration: state.generationContext.configuration, turnId, truncated: message.stopReason === "length", calls };
      return commit(writes, { ...scope, at: "tools", batch }, patch, (done) => [...baseEvents(done), ...retryEnd(true)]);
    }
    if (message.stopReason === "toolUse") {
      return finish(writes, patch, atBoundary, { code: "assistant_error", message: "The response asked for tools but contained no tool call" }, (done) => [...baseEvents(done), ...retryEnd(false), turnEnd]);
    }
    // 6. A final answer: the run may finish at the boundary, decided in this same commit when it
    //    needs no off-line work (run/checkpoint.ts decideOnLine).
    return withBoundaryDecision(pass, { ...laneState, tipId: R }, atBoundary, {
      kind: "commit",
      writes,
      state: atBoundary,
      patch,
      events: (done) => [...baseEvents(done), ...retryEnd(true), turnEnd],
    }, message);
  });
  if (step === "returned") throw new Error("Response settlement always commits");
  return step;
}

/**
 * The settlement entering `checkpoint`, with the boundary's decision folded into the same commit
 * when it needs no off-line work: the same writes and events as two commits, one fewer commit.
 */
function withBoundaryDecision(
  pass: Pass,
  lane: LaneProjection,
  checkpoint: StateAt<"checkpoint">,
  settlement: Extract<TransitionPlan, { kind: "commit" }>,
  response: AssistantMessage,
): TransitionPlan {
  // A threshold compaction may be due: the boundary probes off the line in its own pass.
  if (thresholdPossibleAfter(pass, checkpoint, response)) return settlement;
  const decision = decideOnLine(pass.core, pass, lane, checkpoint, checkpoint);
  if (decision.kind === "mediate" || decision.plan.kind === "return") return settlement;
  const plan = decision.plan;
  const movesTip = plan.writes.some(isTipWrite);
  return {
    ...plan,
    ...(plan.kind === "finish" && { from: checkpoint }),
    writes: [...(movesTip ? settlement.writes.filter((write) => !isTipWrite(write)) : settlement.writes), ...plan.writes],
    patch: { ...settlement.patch, ...plan.patch },
    events: (done) => [...(settlement.events?.(done) ?? []), ...(plan.events?.(done) ?? [])],
  };
}

/**
 * The overflow compaction (reference §3.5 item 2, §6.1): when this generation has not used its
 * recovery yet and compaction is enabled (D14.7), the context the failed request carried (the path
 * to the tip before the response, which projection drops anyway) is prepared; with something to
 * summarize the settlement enters `summary.deciding{overflow}`, resuming `need_assistant` with
 * the recovery used and the original trigger. Read on the line: only an overflow pays for it.
 */
function overflowCompaction(pass: Pass, state: StateAt<"assistant.effect_pending">): { writes: Write[]; state: OperationState; start: HarnessEvent } | undefined {
  const { core } = pass;
  const settings = state.settings.compaction;
  if (state.generationContext.overflowRecoveryUsed || !settings.enabled) return undefined;
  const tipId = pass.lane.state.tipId;
  if (tipId === null) return undefined;
  const context = pathContext(pass.lane.contextPath(), core.projectors);
  const cut = findCut(context.messages, settings.keepRecentTokens);
  if (!preparationAt(context, cut, settings)) return undefined;
  const taskId = core.ids.next();
  const resumeAfter = { continuation: { kind: "need_assistant" as const, overflowRecoveryUsed: true }, triggerEntryId: state.generationContext.triggerEntryId };
  return {
    writes: [setValue(operationPreparation<StoredCompactionPreparation>(pass.operationId, taskId), storedPreparation(tipId, context, cut))],
    state: { ...scopeOf(state), latestAssistantEntryId: state.responseEntryId, at: "summary.deciding", task: { taskId, reason: "overflow", boundary: { kind: "resume_checkpoint", resumeAfter } } },
    start: { type: "compaction_start", lane: pass.lane.name, runId: pass.operationId, reason: "overflow", startedAt: core.clock() },
  };
}

function isTipWrite(write: Write): boolean {
  return write.kind === "value" && write.namespace === "pi.branch.tip";
}

function normalize(response: ProviderAssistant, cancelled: boolean, state: StateAt<"assistant.effect_pending">): AssistantMessage {
  const message = storedAssistant(response);
  if (cancelled) {
    return { ...message, stopReason: "aborted", errorMessage: message.errorMessage ?? "The operation was aborted" };
  }
  if (isContextOverflow(response, state.contextWindow) || isRecoverableLength(response, state.intendedOutputLimit)) {
    return { ...message, stopReason: "error", errorMessage: message.errorMessage ?? "Context overflow" };
  }
  const unpollable = response.stopReason === "deferred" && validHandle(response, state.generationContext.configuration.model) === undefined;
  if (unpollable || (response.stopReason === "toolUse" && !message.content.some((block) => block.type === "toolCall"))) {
    return { ...message, stopReason: "error", errorMessage: message.errorMessage ?? `Unsupported stop reason ${response.stopReason}` };
  }
  return message;
}

function commit(
  writes: Extract<TransitionPlan, { kind: "commit" }>["writes"],
  state: OperationState,
  patch: { tipId: string },
  events: Extract<TransitionPlan, { kind: "commit" }>["events"],
): TransitionPlan {
  return { kind: "commit", writes, state, patch, ...(events && { events }) };
}

function finish(
  writes: Extract<TransitionPlan, { kind: "finish" }>["writes"],
  patch: { tipId: string },
  from: StateAt<"checkpoint">,
  error: { code: string; message: string },
  events: Extract<TransitionPlan, { kind: "finish" }>["events"],
): TransitionPlan {
  return { kind: "finish", writes, status: "failed", error, patch, from, ...(events && { events }) };
}
