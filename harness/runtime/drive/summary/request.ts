import type { AssistantMessage as ProviderAssistant, Context, SimpleStreamOptions } from "@earendil-works/pi-ai";
import type { ProviderModel } from "../../../execution/models.ts";
import type { SummaryContext } from "../../types.ts";
import type { Pass } from "../pass.ts";
import { toSimpleOptions } from "../assistant/request.ts";

/**
 * One nested structural request's options (reference §6.3): `before_request` with step
 * `compaction` (or `branch_summary`), then the structural rules a hook cannot undo: a fresh request identity (never the
 * lane's, so the provider's cache for the lane is untouched), `cacheRetention: "none"` and no
 * deferral. The output is bounded by 80% of the reserve the compaction settings keep free.
 */
export async function summaryRequestOptions(
  pass: Pass,
  model: ProviderModel,
  summaryContext: SummaryContext,
  attempt: number,
  reserveTokens: number,
  step: "compaction" | "branch_summary",
): Promise<SimpleStreamOptions> {
  const identity = { provider: model.provider, modelId: model.id, contextWindow: model.contextWindow, maxTokens: model.maxTokens };
  const requested = await pass.gate.admit((signal) =>
    pass.core.hooks.runBeforeRequest(
      { lane: pass.lane.name, runId: pass.operationId, model: identity, step, attempt, streamOptions: { ...summaryContext.streamOptions, cacheRetention: "none" } },
      { signal },
    ),
  );
  const maxTokens = Math.min(model.maxTokens, Math.floor(reserveTokens * 0.8));
  return {
    ...toSimpleOptions(requested.streamOptions),
    cacheRetention: "none",
    sessionId: crypto.randomUUID(),
    ...(maxTokens > 0 && { maxTokens }),
  };
}

/**
 * The effect: one gated `streamSimple`, read to its end. Nothing streams to watchers and no frame
 * is stored: a summary's partial text is worthless after a crash (the attempt counts as uncertain).
 */
export async function requestSummary(pass: Pass, model: ProviderModel, context: Context, options: SimpleStreamOptions): Promise<ProviderAssistant> {
  const stream = pass.gate.admit((signal) => pass.core.models.streamSimple(model, context, { ...options, signal }));
  for await (const event of stream) {
    if (event.type === "done") return event.message;
    if (event.type === "error") return event.error;
  }
  return stream.result();
}

/** The summary text of a settled response. */
export function summaryText(response: ProviderAssistant): string {
  return response.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("").trim();
}
