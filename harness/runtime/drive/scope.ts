import { normalizeRetryPolicy } from "../settings.ts";
import type { HarnessCore } from "../core.ts";
import type { LaneProjection } from "../lane-state.ts";
import type { GenerationContext, OperationScope, OperationState } from "../types.ts";

/** The uniform scope every leaf carries, copied forward by each transition. */
export function scopeOf(state: OperationState): OperationScope {
  return { control: state.control, settings: state.settings, latestAssistantEntryId: state.latestAssistantEntryId };
}

/** The snapshot taken when a run enters `assistant.ready` (reference §3.3 GenerationContext). */
export function generationContext(core: HarnessCore, lane: LaneProjection, triggerEntryId: string, overflowRecoveryUsed: boolean): GenerationContext {
  const settings = core.settings();
  return {
    stepId: core.ids.next(),
    triggerEntryId,
    configuration: lane.configuration,
    streamOptions: settings.streamOptions,
    retryPolicy: normalizeRetryPolicy(settings.retry),
    overflowRecoveryUsed,
  };
}
