import { normalizeRetryPolicy } from "../settings.ts";
import type { HarnessCore } from "../core.ts";
import type { LaneProjection } from "../lane-state.ts";
import type { GenerationContext, OperationScope, OperationState, RunSettings } from "../types.ts";

/** The uniform scope every leaf carries, copied forward by each transition. */
export function scopeOf(state: OperationState): OperationScope {
  return { control: state.control, settings: state.settings, latestAssistantEntryId: state.latestAssistantEntryId };
}

/** The snapshot taken when a run enters `assistant.ready` (reference §3.3 GenerationContext). */
export function generationContext(core: HarnessCore, lane: LaneProjection, triggerEntryId: string, overflowRecoveryUsed: boolean, run: RunSettings): GenerationContext {
  const settings = core.settings();
  return {
    stepId: core.ids.next(),
    triggerEntryId,
    configuration: lane.configuration,
    // The run request's own deferred mode wins over the session's (§3.11 opt-in per request).
    streamOptions: run.deferred === undefined ? settings.streamOptions : { ...settings.streamOptions, deferred: run.deferred },
    retryPolicy: normalizeRetryPolicy(settings.retry),
    overflowRecoveryUsed,
  };
}
