import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import type { SessionReader } from "../../../session/mutation.ts";
import type { ListElement } from "../../../session/storage.ts";
import { reduceFrames } from "../../../execution/frame-reducer.ts";
import type { AssistantFrame } from "../../../execution/frames.ts";
import { pendingAssistantFrames } from "../../../session/builtin-addresses.ts";
import { zeroUsage } from "../../../session/usage.ts";
import type { AssistantMessage } from "../../../../schema/messages.ts";
import type { HarnessCore } from "../../core.ts";
import type { StateAt } from "../../types.ts";
import type { Pass, Step } from "../pass.ts";
import { settleResponse } from "./settle-response.ts";

export const UNKNOWN_OUTCOME_MESSAGE =
  "The request was interrupted before its response was recorded. The content above is the latest committed " +
  "partial output; newer live output may be missing. Whether the provider completed the request is unknown.";

/** Every committed frame of one response, read page by page (lists are never read whole, §1.6). */
export function committedFrames(reader: Pick<SessionReader, "readList">, operationId: string, responseEntryId: string): AssistantFrame[] {
  const address = pendingAssistantFrames<AssistantFrame>(operationId, responseEntryId);
  const frames: AssistantFrame[] = [];
  let page: ListElement<AssistantFrame>[] = reader.readList(address, { limit: 1000 });
  while (page.length > 0) {
    frames.push(...page.map((element) => element.value));
    const last = page[page.length - 1];
    page = last ? reader.readList(address, { cursor: { seq: last.seq }, limit: 1000 }) : [];
  }
  return frames;
}

/**
 * The response a crash left unknown, rebuilt from committed frames (reference §4.6): the latest
 * partial content, zero usage, and an error (or, under cancellation, an aborted) stop reason.
 */
export function syntheticResponse(
  core: HarnessCore,
  operationId: string,
  state: StateAt<"assistant.effect_pending"> | StateAt<"deferred.effect_pending">,
  stopReason: "error" | "aborted",
): ProviderAssistant {
  const partial: AssistantMessage | undefined = reduceFrames(committedFrames(core.session, operationId, state.responseEntryId));
  const { provider, modelId } = (state.at === "assistant.effect_pending" ? state.generationContext.configuration : state.configuration).model;
  return {
    role: "assistant",
    content: (partial?.content ?? []).map((block) => (block.type === "toolCall" ? { ...block, arguments: { ...block.arguments } } : block)),
    api: partial?.api ?? "unknown",
    provider: partial?.provider ?? provider,
    model: partial?.model ?? modelId,
    usage: zeroUsage(),
    stopReason,
    errorMessage: stopReason === "aborted" ? "The operation was aborted" : UNKNOWN_OUTCOME_MESSAGE,
    timestamp: partial?.timestamp ?? core.clock(),
  };
}

/**
 * A restored `assistant.effect_pending`: the outcome is unknown. Settle a synthetic response under
 * the reserved ids and classify it as a retryable error; its partial tool calls never run.
 */
export async function recoverAssistant(pass: Pass, state: StateAt<"assistant.effect_pending">): Promise<Step> {
  return settleResponse(pass, syntheticResponse(pass.core, pass.operationId, state, "error"), { recovery: true, framed: true });
}
