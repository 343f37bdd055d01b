import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import type { HarnessEvent } from "../../../../schema/lane.ts";
import type { AssistantMessage, ToolResultMessage } from "../../../../schema/messages.ts";
import { followerId } from "../../../session/ids.ts";
import type { StateAt, ToolCallState } from "../../types.ts";
import { pollTurnId, suspension, validHandle } from "./suspension.ts";
import type { Pass, Step } from "../pass.ts";
import { scopeOf } from "../scope.ts";
import { settledResponse, storedAssistant } from "../assistant/response.ts";
import { settleOperation, type TransitionPlan } from "../transition.ts";

/**
 * Settles one deferred poll (reference §3.4 `deferred.effect_pending`): one transaction commits
 * the fetched response under the poll's reserved ids (entry, usage row, tip, frame delete) and one
 * successor: under cancellation the aborted response rests at `checkpoint` for reconciliation;
 * still pending → `deferred.suspended` at the same poll number (this entry now holds the handle);
 * ready with tool calls → `tools`; ready without → `checkpoint{may_finish}`; an error (or an
 * invalid handle) → terminal failed. A poll has no retry wait: the next permit polls again.
 */
export async function settlePoll(pass: Pass, response: ProviderAssistant, options: { recovery: boolean; framed: boolean }): Promise<Step> {
  const step = await settleOperation(pass, (m, operation, laneState): TransitionPlan => {
    const state = operation.state;
    if (state.at !== "deferred.effect_pending") throw new Error(`Cannot settle a deferred poll at ${state.at}`);
    const cancelled = state.control.status === "cancel_requested";
    const lane = pass.lane.name;
    const runId = pass.operationId;
    const R = state.responseEntryId;
    const handle = response.stopReason === "deferred" ? validHandle(response, state.configuration.model) : undefined;
    const message = normalize(response, cancelled, handle !== undefined);
    const scope = { ...scopeOf(state), latestAssistantEntryId: R };
    const { writes, events: baseEvents } = settledResponse(pass, m, { responseEntryId: R, usageId: state.usageId, parentId: laneState.tipId, message }, options);
    const turnId = pollTurnId(state.stepId, state.poll);
    const turnEnd: HarnessEvent = { type: "turn_end", lane, runId, turnId, message, toolResults: [] as ToolResultMessage[] };
    const patch = { tipId: R };
    const atBoundary: StateAt<"checkpoint"> = { ...scope, at: "checkpoint", continuation: { kind: "may_finish", includeFinalAssistant: true }, triggerEntryId: R };
    if (cancelled) return { kind: "commit", writes, state: atBoundary, patch, events: (done) => [...baseEvents(done), turnEnd] };
    if (handle) {
      const { stepId, configuration, streamOptions, poll } = state;
      const suspended = suspension(pass, scope, { stepId, configuration, streamOptions, poll }, R, handle);
      return { kind: "commit", writes, state: suspended.state, patch, events: (done) => [...baseEvents(done), turnEnd, suspended.event], afterCommit: suspended.afterCommit };
    }
    if (message.stopReason === "error") {
      const error = { code: "deferred_error", message: message.errorMessage ?? "The deferred response failed" };
      return { kind: "finish", writes, status: "failed", error, patch, from: atBoundary, events: (done) => [...baseEvents(done), turnEnd] };
    }
    const calls: ToolCallState[] = message.content.flatMap((block, sourceIndex) =>
      block.type === "toolCall" ? [{ sourceIndex, resultEntryId: followerId(pass.core.ids, R), status: "planned" as const }] : [],
    );
    if (calls.length > 0) {
      const batch = { assistantEntryId: R, configuration: state.configuration, turnId, truncated: message.stopReason === "length", calls };
      return { kind: "commit", writes, state: { ...scope, at: "tools", batch }, patch, events: baseEvents };
    }
    return { kind: "commit", writes, state: atBoundary, patch, events: (done) => [...baseEvents(done), turnEnd] };
  });
  if (step === "returned") throw new Error("A poll settlement always commits");
  return step;
}

function normalize(response: ProviderAssistant, cancelled: boolean, validDeferred: boolean): AssistantMessage {
  const message = storedAssistant(response);
  if (cancelled) return { ...message, stopReason: "aborted", errorMessage: message.errorMessage ?? "The operation was aborted" };
  if (response.stopReason === "deferred" && !validDeferred) {
    return { ...message, stopReason: "error", errorMessage: message.errorMessage ?? "The provider answered with a deferred handle this run cannot poll" };
  }
  if (response.stopReason === "toolUse" && !message.content.some((block) => block.type === "toolCall")) {
    return { ...message, stopReason: "error", errorMessage: message.errorMessage ?? "The response asked for tools but contained no tool call" };
  }
  return message;
}
