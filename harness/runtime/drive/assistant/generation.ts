import type { StateAt } from "../../types.ts";
import { streamAssistant } from "./stream.ts";
import { CONTINUE, type Pass, type Step } from "../pass.ts";
import { prepareAssistantRequest } from "./request.ts";
import { scopeOf } from "../scope.ts";
import { settleResponse } from "./settle-response.ts";
import { continueOperation, settled } from "../transition.ts";
import { recoverAssistant } from "./recover.ts";

/**
 * `assistant.ready` (reference §3.4): prepare → commit the request intent under fresh response and
 * usage ids → admit the provider stream → commit the settlement. A model or tool missing from the
 * registry before the intent is a configuration failure; nothing is fabricated.
 */
export async function generate(pass: Pass, state: StateAt<"assistant.ready">): Promise<Step> {
  const { core } = pass;
  const generation = state.generationContext;
  const { provider, modelId } = generation.configuration.model;
  const model = core.models.getModel(provider, modelId);
  const missingTools = generation.configuration.activeToolNames.filter((name) => !core.tools.resolve(name));
  if (!model || missingTools.length > 0) {
    const error = !model
      ? { code: "model_unavailable", message: `Model ${provider}/${modelId} is not available` }
      : { code: "configured_tools_unavailable", message: `Tools not available: ${missingTools.join(", ")}` };
    return settled(await continueOperation(pass, () => ({ kind: "finish", writes: [], status: "failed", error })));
  }
  const { context, options } = await prepareAssistantRequest(pass, model, generation, state.nextAttempt);
  const responseEntryId = core.ids.next();
  const usageId = core.ids.next();
  const intent = await continueOperation(pass, (_m, operation) => ({
    kind: "commit",
    writes: [],
    state: {
      ...scopeOf(operation.state),
      at: "assistant.effect_pending",
      generationContext: generation,
      attempt: state.nextAttempt,
      responseEntryId,
      usageId,
      // The limit this request asks for (the session's maxTokens, a hook's): a length stop below
      // it is an overflow (§6.1), one at it the answer the caller asked to cut.
      intendedOutputLimit: options.maxTokens ?? model.maxTokens,
      contextWindow: model.contextWindow,
    },
    events: () =>
      state.nextAttempt === 1 ? [{ type: "turn_start", lane: pass.lane.name, runId: pass.operationId, turnId: generation.stepId }] : [],
  }));
  if (intent !== CONTINUE) return settled(intent);
  const { response, framed } = await streamAssistant(pass, model, context, options, responseEntryId);
  return settleResponse(pass, response, { recovery: false, framed });
}

/**
 * An intent committed with the run's acceptance and not sent yet (first-request.ts): prepare the
 * request (no hook runs before it, or the acceptance would not have carried the intent), admit
 * the provider stream, commit the settlement, exactly as `generate` does after its intent. A
 * model gone from the registry since leaves the outcome path (a retryable unknown outcome).
 */
export async function sendIntended(pass: Pass, state: StateAt<"assistant.effect_pending">): Promise<Step> {
  const generation = state.generationContext;
  const { provider, modelId } = generation.configuration.model;
  const model = pass.core.models.getModel(provider, modelId);
  if (!model) return recoverAssistant(pass, state);
  const { context, options } = await prepareAssistantRequest(pass, model, generation, state.attempt);
  const { response, framed } = await streamAssistant(pass, model, context, options, state.responseEntryId);
  return settleResponse(pass, response, { recovery: false, framed });
}
