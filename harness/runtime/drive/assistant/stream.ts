import type { AssistantMessage as ProviderAssistant, AssistantMessageEventStream, Context, Model, Api, SimpleStreamOptions } from "@earendil-works/pi-ai";
import { AbortRequested } from "../../../execution/effect-gate.ts";
import { FrameCoalescer, UpdateThrottle, type AssistantFrame } from "../../../execution/frames.ts";
import { pendingAssistantFrames } from "../../../session/builtin-addresses.ts";
import { appendList } from "../../../session/writes.ts";
import { MessageDeltas } from "../../../execution/message-deltas.ts";
import type { HarnessEvent } from "../../../../schema/lane.ts";
import type { MessageDelta } from "../../../../schema/message-delta.ts";
import { ProgressWriter } from "../progress.ts";
import type { JsonValue } from "../../../../schema/json.ts";
import { pendingCopy, storedAssistant } from "./response.ts";
import type { Pass } from "../pass.ts";

/**
 * The assistant effect (reference §7.1 execution block): one gated `streamSimple`, progress frames
 * coalesced per ARCHITECTURE D10 and appended without awaiting storage per frame, live
 * `message_start`/`message_update` events throttled for the wire, then — after the last frame
 * write is awaited — `after_response`. Returns the response (and whether any progress frame was
 * stored); its settlement emits `message_end`.
 */
export async function streamAssistant(
  pass: Pass,
  model: Model<Api>,
  context: Context,
  options: SimpleStreamOptions,
  responseEntryId: string,
  /** Where the response comes from instead of a request (a deferred poll, §3.11): admitted the same way. */
  source?: (signal: AbortSignal) => AssistantMessageEventStream,
): Promise<{ response: ProviderAssistant; framed: boolean }> {
  const { core } = pass;
  const lane = pass.lane.name;
  const runId = pass.operationId;
  const frames = pendingAssistantFrames<AssistantFrame>(runId, responseEntryId);
  const identity = { provider: model.provider, modelId: model.id, contextWindow: model.contextWindow, maxTokens: model.maxTokens };
  let httpResponse: { status: number; headers: Record<string, string> } | undefined;
  const requestOptions: SimpleStreamOptions = {
    ...options,
    // before_payload is request-local and gated as one pipeline, inside the admitted request;
    // without handlers the provider's payload is not even copied.
    ...(core.hooks.has("before_payload") && {
      onPayload: async (payload: unknown) => {
        const json: JsonValue = payload === undefined ? null : JSON.parse(JSON.stringify(payload));
        const patched = await pass.gate.admit((signal) => core.hooks.runBeforePayload({ lane, runId, model: identity, payload: json }, { signal }));
        return patched.payload === json ? undefined : patched.payload;
      },
    }),
    onResponse: (response) => {
      httpResponse = { status: response.status, headers: { ...response.headers } };
    },
  };
  // Admission happens here; everything above was preparation (reference §4.3).
  const stream = pass.gate.admit((signal) => (source ? source(signal) : core.models.streamSimple(model, context, { ...requestOptions, signal })));
  const update = (delta: MessageDelta | undefined): HarnessEvent | undefined =>
    delta && { type: "message_update", lane, runId, entryId: responseEntryId, delta };
  const coalescer = new FrameCoalescer({ clock: core.clock });
  const throttle = new UpdateThrottle(() => core.liveUpdateIntervalMs(lane), core.clock);
  // Frames are fenced to this attempt: a frame that reaches the line once the response settled
  // (or the harness closed) writes nothing.
  const progress = new ProgressWriter(
    pass,
    (state) => (state.at === "assistant.effect_pending" || state.at === "deferred.effect_pending") && state.responseEntryId === responseEntryId,
  );
  const persist = (frame: AssistantFrame | undefined): void => {
    if (frame) progress.write([appendList(frames, frame)]);
  };
  let final: ProviderAssistant | undefined;
  let deltas: MessageDeltas | undefined;
  for await (const event of stream) {
    if (event.type === "done") {
      final = event.message;
      continue;
    }
    if (event.type === "error") {
      final = event.error;
      continue;
    }
    persist(coalescer.push(event));
    const partial = event.partial;
    if (!deltas) {
      // The start carries the partial whole; afterwards watchers get what changed (deltas).
      const message = pendingCopy(partial);
      const started = new MessageDeltas(message);
      deltas = started;
      // A reference: the provider grows its live partial in place. It is copied only for a
      // snapshot; a capture first sends the pending delta, so the two stay consistent (§5.3).
      pass.lane.setStreaming(partial, () => update(started.take(partial)));
      await core.events.emitBatch([{ type: "message_start", lane, runId, message }]);
      continue;
    }
    deltas.push(event);
    if (throttle.shouldEmit()) {
      const pending = update(deltas.take(partial));
      if (pending) await core.events.emitBatch([pending]);
    }
  }
  // D10's write "at settlement" is the settlement commit itself, which holds the whole response.
  // Only an after_response pipeline (which may take a while) sits between the stream's end and
  // that commit, so only then is the unframed tail persisted first for crash recovery.
  if (core.hooks.has("after_response")) persist(coalescer.flush());
  await progress.flushed();
  let response = final ?? (await stream.result());
  const cancelled = (): boolean => pass.lane.state.operation?.state.control.status === "cancel_requested";
  const stopReason = response.stopReason;
  if (stopReason !== "aborted" && stopReason !== "pending" && !cancelled()) {
    try {
      const patched = await pass.gate.admit((signal) =>
        core.hooks.runAfterResponse({ lane, runId, ...httpResponse, message: { ...storedAssistant(response), stopReason } }, { signal }),
      );
      response = mergeHookMessage(response, patched.message);
    } catch (error) {
      // Abort won the race against after_response: the hook is skipped and the raw response settles
      // under cancelled control (reference §7.1).
      if (error instanceof AbortRequested) await error.cancellation;
      else if (!pass.gate.signal.aborted && !cancelled()) throw error;
    }
  }
  // The live partial stays the snapshot's streaming message until the settlement commit, which
  // clears it and emits message_end in its own batch: no capture can fall between the two (§5.3).
  return { response, framed: progress.wroteAny };
}

/** after_response returns the stored shape; carry its fields over the provider's response. */
function mergeHookMessage(response: ProviderAssistant, patched: ReturnType<typeof storedAssistant>): ProviderAssistant {
  return {
    ...response,
    content: patched.content.map((block) =>
      block.type === "toolCall" ? { ...block, arguments: { ...block.arguments } } : { ...block },
    ),
    stopReason: patched.stopReason,
    ...(patched.errorMessage !== undefined && { errorMessage: patched.errorMessage }),
    usage: patched.usage,
  };
}
