import type { Entry } from "../../schema/entries.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import { pathTokens } from "../compaction/preparation.ts";
import { estimateMessageTokens, shouldCompact } from "../compaction/tokens.ts";
import { requestMaxTokens } from "../execution/sampling.ts";
import type { HarnessCore } from "./core.ts";
import { generationContext, scopeOf } from "./drive/scope.ts";
import type { LaneProjection } from "./lane-state.ts";
import type { OperationState, StateAt } from "./types.ts";

// A run accepted by a caller that drives it at once in this process (the prompt conveniences, the
// API's prompt) can commit its first request intent with its acceptance: one commit and one lane
// state row fewer per turn (QUALITY P2/P12). That is exact only where the pass would otherwise
// write nothing between the two commits and decide nothing a hook or the stored context could
// change. Then `starting` → `checkpoint{need_assistant}` → `assistant.ready` are each decided
// without a commit (run/start.ts, run/checkpoint.ts), and the intent's fields are known on the
// line: the durable outcome is the one a pass reaches when it commits its intent right after the
// acceptance. A crash after this commit restores `assistant.effect_pending` (unknown outcome,
// reference §4.6), exactly as a crash after that intent commit does.

/** The hooks whose handlers would run between acceptance and the intent (any of them: no fusion). */
const HOOKS_BEFORE_THE_INTENT = ["before_drive", "before_run", "transform_context", "before_request"] as const;

/** The lane an acceptance with its first request reads: its name and warm context path (before the prompt). */
export interface FirstRequestLane {
  readonly name: string;
  contextPath(): readonly Entry[];
}

/** The first request intent an acceptance carries, and the event its intent commit would publish. */
export interface FirstRequest {
  state: StateAt<"assistant.effect_pending">;
  turnStart: HarnessEvent;
}

/**
 * The intent a run's acceptance may carry, or undefined when the run must start the ordinary way:
 * something queued (the start would place it), a hook that runs before the intent, a model or tool
 * missing from the registry (a configuration failure, decided by the pass), or a context the
 * threshold probe could find too large with the prompt placed (a compaction comes first).
 */
export function firstRequestIntent(
  core: HarnessCore,
  lane: FirstRequestLane,
  before: LaneProjection,
  prompt: readonly AgentMessage[],
  starting: OperationState,
  operationId: string,
  tipId: string,
): FirstRequest | undefined {
  if (before.inbox.length > 0 || prompt.length === 0) return undefined;
  if (HOOKS_BEFORE_THE_INTENT.some((name) => core.hooks.has(name))) return undefined;
  const { configuration } = before;
  const model = core.models.getModel(configuration.model.provider, configuration.model.modelId);
  if (!model || configuration.activeToolNames.some((name) => !core.tools.resolve(name))) return undefined;
  // The probe's estimate is additive over appended user messages (compaction/tokens.ts): the path
  // before acceptance plus the prompt is the path the start would probe. No candidate without a
  // threshold crossing, so a context under it never needs the probe's other checks.
  const compaction = starting.settings.compaction;
  if (compaction.enabled) {
    const tokens = pathTokens(lane.contextPath(), core.projectors) + prompt.reduce((sum, message) => sum + estimateMessageTokens(message), 0);
    if (shouldCompact(tokens, model.contextWindow, compaction)) return undefined;
  }
  const generation = generationContext(core, before, tipId, false, starting.settings);
  const responseEntryId = core.ids.next();
  const usageId = core.ids.next();
  return {
    state: {
      ...scopeOf(starting),
      at: "assistant.effect_pending",
      generationContext: generation,
      attempt: 1,
      responseEntryId,
      usageId,
      // As generation.ts: the limit asked for (no hook runs before this intent, so the settings').
      intendedOutputLimit: requestMaxTokens(model, generation.streamOptions.maxTokens) ?? model.maxTokens,
      contextWindow: model.contextWindow,
    },
    turnStart: { type: "turn_start", lane: lane.name, runId: operationId, turnId: generation.stepId },
  };
}
