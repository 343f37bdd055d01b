import type { AssistantMessage } from "../../../../schema/messages.ts";
import type { Entry } from "../../../../schema/entries.ts";
import { findCut, pathContext, pathTokens, preparationAt, storedPreparation, type StoredCompactionPreparation } from "../../../compaction/preparation.ts";
import { shouldCompact, usageTokens } from "../../../compaction/tokens.ts";
import type { OperationScope } from "../../types.ts";
import type { Pass } from "../pass.ts";

// The threshold probe of the boundary planner (reference §3.6 step 1, §6.1): off the line, over
// the compaction-bounded path, does the context leave less than the reserve free in the lane's
// current model's window? The probe writes nothing; a candidate is committed (preparation +
// `summary.deciding{threshold}`) only by the boundary's one decision.

/** A threshold compaction the boundary may open: a fresh task id and the cut it would summarize. */
export interface ThresholdCandidate {
  taskId: string;
  stored: StoredCompactionPreparation;
}

/**
 * The probe. It applies only when compaction is enabled and the lane's current model resolves
 * (its context window is the yardstick; the estimate counts the provider's reported tokens of the
 * newest valid response, §6.1). The recency guard replaces a durable "checked" flag: when the
 * branch's newest compaction is at or after the trigger, this trigger has had its compaction
 * (a crash after that commit never compacts twice).
 */
export function probeThreshold(pass: Pass, scope: OperationScope, triggerEntryId: string): ThresholdCandidate | undefined {
  const { core, lane } = pass;
  const settings = scope.settings.compaction;
  if (!settings.enabled) return undefined;
  const tipId = lane.state.tipId;
  const window = contextWindowOf(pass);
  if (tipId === null || window === undefined) return undefined;
  const path = lane.contextPath();
  if (compactedSince(path, triggerEntryId)) return undefined;
  if (!shouldCompact(pathTokens(path, core.projectors), window, settings)) return undefined;
  const context = pathContext(path, core.projectors);
  const cut = findCut(context.messages, settings.keepRecentTokens);
  if (!preparationAt(context, cut, settings)) return undefined;
  return { taskId: core.ids.next(), stored: storedPreparation(tipId, context, cut) };
}

/**
 * Whether a boundary right after this settled response could find a threshold candidate, decided
 * without reading the path: the response is the newest valid one, so the provider's count for it
 * is the whole context estimate. When it cannot, the settlement may carry the boundary's decision
 * in its own commit (QUALITY P2); when it might, the boundary runs as its own pass and probes.
 */
export function thresholdPossibleAfter(pass: Pass, scope: OperationScope, response: AssistantMessage): boolean {
  const settings = scope.settings.compaction;
  if (!settings.enabled) return false;
  const window = contextWindowOf(pass);
  if (window === undefined) return false;
  const counted = response.stopReason === "error" || response.stopReason === "aborted" ? undefined : usageTokens(response.usage);
  return counted === undefined || shouldCompact(counted, window, settings);
}

function contextWindowOf(pass: Pass): number | undefined {
  const { provider, modelId } = pass.lane.state.configuration.model;
  return pass.core.models.getModel(provider, modelId)?.contextWindow;
}

/** The bounded path starts at the newest compaction; the trigger lies after it, or it compacted since. */
function compactedSince(path: readonly Entry[], triggerEntryId: string): boolean {
  if (path[0]?.type !== "compaction") return false;
  for (let index = path.length - 1; index > 0; index--) {
    if (path[index]?.id === triggerEntryId) return false;
  }
  return true;
}
