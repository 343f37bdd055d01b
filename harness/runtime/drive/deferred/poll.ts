import type { DeferredHandle } from "../../../../schema/messages.ts";
import { pendingAssistantFrames } from "../../../session/builtin-addresses.ts";
import { deleteList } from "../../../session/writes.ts";
import { storedHandle } from "../../deferred-handle.ts";
import type { DeferredScope, StateAt } from "../../types.ts";
import { streamAssistant } from "../assistant/stream.ts";
import { CONTINUE, type Pass, type Step } from "../pass.ts";
import { syntheticResponse } from "../assistant/recover.ts";
import { toSimpleOptions } from "../assistant/request.ts";
import { scopeOf } from "../scope.ts";
import { settlePoll } from "./settle-poll.ts";
import { pollTurnId } from "./suspension.ts";
import { continueOperation, settled, settleOperation } from "../transition.ts";

// Deferred (provider-async) responses (reference §3.11, §4.5–4.6 deferred rows): a settled
// assistant with `stopReason: "deferred"` holds a handle; the run rests at `deferred.suspended`
// until a pass with a poll permit fetches it (`deferred.effect_pending`), one poll per permit.
// Wake-ups are the host's (D14.9): the pass without a permit answers `waiting{deferred}`.

/** The handle of a suspended run: its source entry (the assistant that deferred) holds it. */
export function handleOf(pass: Pass, state: DeferredScope): { handle: DeferredHandle; storedAt: number } {
  const stored = storedHandle(pass.core.session, state.sourceEntryId);
  if (!stored) throw new Error(`Invariant: the deferred source ${state.sourceEntryId} holds no handle`);
  return stored;
}

/**
 * `deferred.suspended`: an expired handle fails the run (`deferred_expired`, D14.10); before
 * `pollAfterMs` has passed, or without a permit, nothing changes and the pass answers
 * `waiting{deferred}`; a missing model fails it. With a permit: `before_request{step: deferred}`,
 * the poll intent (fresh ids, `poll + 1`; `run_resume`, `turn_start`), one gated fetch, settled
 * through the same classification.
 */
export async function deferredSuspended(pass: Pass, state: StateAt<"deferred.suspended">): Promise<Step> {
  const { core } = pass;
  const { handle, storedAt } = handleOf(pass, state);
  const now = core.clock();
  const expired = expiry(handle, now);
  if (expired) return settled(await continueOperation(pass, () => ({ kind: "finish", writes: [], status: "failed", error: expired })));
  const waiting: Step = { kind: "waiting", outcome: { kind: "waiting", operationId: pass.operationId, reason: "deferred", deferred: handle } };
  if (handle.pollAfterMs !== undefined && now < storedAt + handle.pollAfterMs) return waiting;
  if (!pass.takeDeferredPermit()) return waiting;
  const { provider, modelId } = state.configuration.model;
  const model = core.models.getModel(provider, modelId);
  if (!model) {
    const error = { code: "model_unavailable", message: `Model ${provider}/${modelId} is not available` };
    return settled(await continueOperation(pass, () => ({ kind: "finish", writes: [], status: "failed", error })));
  }
  return poll(pass, state, state.poll + 1, model, handle, []);
}

/**
 * A restored `deferred.effect_pending` (§4.6): a handle past its expiry deletes the lost poll's
 * frames and fails the run `deferred_expired` (D14.10), as the suspended leaf does — polling it
 * again cannot answer; otherwise, without a permit it stays (a snapshot shows the durable
 * partial); with one, the unknown poll is replaced under fresh ids at the same poll number (its
 * frames deleted by the new intent) and fetched once. A missing model deletes the frames and
 * fails the run. There is no attempt cap: a poll only reads.
 */
export async function recoverPoll(pass: Pass, state: StateAt<"deferred.effect_pending">): Promise<Step> {
  const { core } = pass;
  const { handle } = handleOf(pass, state);
  const frames = deleteList(pendingAssistantFrames(pass.operationId, state.responseEntryId));
  const expired = expiry(handle, core.clock());
  if (expired) return settled(await continueOperation(pass, () => ({ kind: "finish", writes: [frames], status: "failed", error: expired })));
  if (!pass.takeDeferredPermit()) return { kind: "waiting", outcome: { kind: "waiting", operationId: pass.operationId, reason: "deferred", deferred: handle } };
  const { provider, modelId } = state.configuration.model;
  const model = core.models.getModel(provider, modelId);
  if (!model) {
    const error = { code: "model_unavailable", message: `Model ${provider}/${modelId} is not available` };
    return settled(await continueOperation(pass, () => ({ kind: "finish", writes: [frames], status: "failed", error })));
  }
  return poll(pass, state, state.poll, model, handle, [frames]);
}

/** The run's failure when its handle is past `expiresAt` (D14.10), else undefined. */
function expiry(handle: DeferredHandle, now: number): { code: string; message: string } | undefined {
  if (handle.expiresAt === undefined || now < handle.expiresAt) return undefined;
  return { code: "deferred_expired", message: `The provider's deferred response ${handle.id} expired before it was fetched` };
}

async function poll(
  pass: Pass,
  state: StateAt<"deferred.suspended"> | StateAt<"deferred.effect_pending">,
  number: number,
  model: NonNullable<ReturnType<Pass["core"]["models"]["getModel"]>>,
  handle: DeferredHandle,
  replaced: ReturnType<typeof deleteList>[],
): Promise<Step> {
  const { core } = pass;
  const lane = pass.lane.name;
  const runId = pass.operationId;
  const identity = { provider: model.provider, modelId: model.id, contextWindow: model.contextWindow, maxTokens: model.maxTokens };
  const requested = await pass.gate.admit((signal) =>
    core.hooks.runBeforeRequest({ lane, runId, model: identity, step: "deferred", attempt: number, streamOptions: { ...state.streamOptions } }, { signal }),
  );
  const responseEntryId = core.ids.next();
  const usageId = core.ids.next();
  const { stepId, configuration, streamOptions, sourceEntryId } = state;
  const intent = await continueOperation(pass, (_m, operation) => ({
    kind: "commit",
    writes: replaced,
    state: { ...scopeOf(operation.state), at: "deferred.effect_pending", stepId, sourceEntryId, poll: number, configuration, streamOptions, responseEntryId, usageId },
    events: () => [
      { type: "run_resume", lane, runId },
      { type: "turn_start", lane, runId, turnId: pollTurnId(stepId, number) },
    ],
  }));
  if (intent !== CONTINUE) return settled(intent);
  const options = { ...toSimpleOptions(requested.streamOptions), wait: 0 };
  const { response, framed } = await streamAssistant(pass, model, { messages: [] }, {}, responseEntryId, (signal) =>
    core.models.streamDeferred(model, handle, { ...options, signal }),
  );
  // An abort during the poll also asks the provider to drop the work (§3.11), before settling.
  if (pass.lane.state.operation?.state.control.status === "cancel_requested") await cancelAtProvider(pass, model, handle);
  return settlePoll(pass, response, { recovery: false, framed });
}

/**
 * Cancellation of a deferred run (§4.5): the provider is asked, best effort, to drop the work
 * (with the drive's close-only signal: an abort must not cut its own cancellation), then a poll in
 * flight settles as a synthetic aborted response and the loop ends the run aborted.
 */
export async function cancelDeferredRun(pass: Pass, state: StateAt<"deferred.suspended"> | StateAt<"deferred.effect_pending">): Promise<Step> {
  const { core } = pass;
  const { handle } = handleOf(pass, state);
  const { provider, modelId } = state.configuration.model;
  const model = core.models.getModel(provider, modelId);
  if (model) await cancelAtProvider(pass, model, handle);
  if (state.at === "deferred.effect_pending") {
    return settlePoll(pass, syntheticResponse(core, pass.operationId, state, "aborted"), { recovery: true, framed: true });
  }
  return settled(await settleOperation(pass, () => ({ kind: "finish", writes: [], status: "aborted" })));
}

/** Best effort, with the drive's close-only signal: an abort must not cut its own cancellation. */
async function cancelAtProvider(pass: Pass, model: NonNullable<ReturnType<Pass["core"]["models"]["getModel"]>>, handle: DeferredHandle): Promise<void> {
  await pass.core.models.cancelDeferred(model, handle, { signal: pass.gate.closeSignal }).catch(() => undefined);
}
