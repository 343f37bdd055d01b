import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import type { HarnessEvent, ModelIdentity } from "../../../../schema/lane.ts";
import type { DeferredHandle } from "../../../../schema/messages.ts";
import type { DeferredScope, OperationScope, StateAt } from "../../types.ts";
import type { Pass } from "../pass.ts";

// What a settlement needs to rest a run on a deferred handle (reference §3.5 item 3, §3.4
// `deferred.effect_pending`). Both settlements commit it, the assistant's (the first deferral)
// and the poll's (still pending): they import it from here rather than from the poll procedure,
// which itself settles through them.

/** The handle a deferred response carries, when it is one this run can poll (§3.5 item 3). */
export function validHandle(response: ProviderAssistant, model: ModelIdentity): DeferredHandle | undefined {
  const handle = response.deferred;
  if (!handle || handle.id.length === 0) return undefined;
  if (handle.provider !== model.provider || handle.modelId !== model.modelId || handle.api !== response.api) return undefined;
  return handle;
}

/** The suspended leaf a settlement commits, and its `run_suspend` event. */
export function suspension(
  pass: Pass,
  scope: OperationScope,
  deferred: Omit<DeferredScope, "sourceEntryId">,
  sourceEntryId: string,
  handle: DeferredHandle,
): { state: StateAt<"deferred.suspended">; event: HarnessEvent; afterCommit: () => void } {
  return {
    state: { ...scope, at: "deferred.suspended", ...deferred, sourceEntryId },
    event: { type: "run_suspend", lane: pass.lane.name, runId: pass.operationId, reason: "deferred", deferred: handle, poll: deferred.poll },
    // Nothing is due in the object until a permit arrives (a resume, or the host's sweep from
    // `pollAfterMs` on): no alarm for it.
    afterCommit: () => {
      const { wake } = pass.core;
      const pollAt = pass.core.clock() + (handle.pollAfterMs ?? 0);
      if (wake.suspended) wake.suspended(pass.lane.name, pass.operationId, pollAt);
      else wake.parked?.(pass.lane.name, pass.operationId);
    },
  };
}

/** A poll's turn id (§3.5 item 5): the generation's step and the poll number. */
export function pollTurnId(stepId: string, poll: number): string {
  return `${stepId}:poll:${poll}`;
}
