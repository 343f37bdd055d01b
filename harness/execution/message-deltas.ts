import type { AssistantMessage as ProviderAssistant, AssistantMessageEvent } from "@earendil-works/pi-ai";
import type { AssistantMessage } from "../../schema/messages.ts";
import type { DeltaBlock, MessageDelta } from "../../schema/message-delta.ts";
import { toJsonObject } from "./pi-json.ts";

type Sent =
  | { t: "text" | "thinking"; text: string; signature?: string; redacted?: boolean; replaced: boolean }
  | { t: "toolCall"; call: string };

/**
 * The wire deltas of one streaming response (`message_update.delta`, ARCHITECTURE D10; reference
 * §8 "planned replication optimization"): each holds what changed in the live partial since the
 * previous delta — or since the copy `message_start` carried — so watchers receive the response
 * about once, not once per update. Deltas are taken from the live partial itself, never from the
 * events being processed: a provider grows its partial ahead of the events its consumer has read,
 * so an event-built delta could repeat what a copy already held. Text and thinking grow by the
 * text appended since (O(new text) per delta); a block whose final text does not extend what was
 * sent (a provider's replacement at its end) is sent whole once more. Tool-call arguments (small,
 * parsed as they stream) go whole when they changed: a replica has no raw argument text.
 */
export class MessageDeltas {
  readonly #sent: Sent[] = [];
  #usage: string;
  #responseId: string | undefined;
  #responseModel: string | undefined;

  /** Starts from the copy `message_start` carried: what it holds is already sent. */
  constructor(sent: AssistantMessage & { responseId?: string; responseModel?: string }) {
    // Recording a block as sent is exactly what computing its delta does.
    sent.content.forEach((block, index) => this.#blockDelta(index, block));
    this.#usage = JSON.stringify(sent.usage);
    this.#responseId = sent.responseId;
    this.#responseModel = sent.responseModel;
  }

  /** Notes a block's end: a final text that does not extend what was sent must go whole. */
  push(event: AssistantMessageEvent): void {
    if (event.type !== "text_end" && event.type !== "thinking_end") return;
    const sent = this.#sent[event.contentIndex];
    if (sent && sent.t !== "toolCall" && !event.content.startsWith(sent.text)) sent.replaced = true;
  }

  /** What changed since the last delta (undefined: nothing); `partial` is the live message. */
  take(partial: ProviderAssistant): MessageDelta | undefined {
    const blocks: DeltaBlock[] = [];
    partial.content.forEach((block, index) => {
      const delta = this.#blockDelta(index, block);
      if (delta) blocks.push(delta);
    });
    const usage = JSON.stringify(partial.usage);
    const usageChanged = usage !== this.#usage;
    const responseId = partial.responseId !== this.#responseId ? partial.responseId : undefined;
    const responseModel = partial.responseModel !== this.#responseModel ? partial.responseModel : undefined;
    if (blocks.length === 0 && !usageChanged && responseId === undefined && responseModel === undefined) return undefined;
    this.#usage = usage;
    this.#responseId = partial.responseId;
    this.#responseModel = partial.responseModel;
    return {
      blocks,
      ...(usageChanged && { usage: structuredClone(partial.usage) }),
      ...(responseId !== undefined && { responseId }),
      ...(responseModel !== undefined && { responseModel }),
    };
  }

  #blockDelta(index: number, block: ProviderAssistant["content"][number] | AssistantMessage["content"][number]): DeltaBlock | undefined {
    const sent = this.#sent[index];
    switch (block.type) {
      case "text":
      case "thinking": {
        const text = block.type === "text" ? block.text : block.thinking;
        const signature = block.type === "text" ? block.textSignature : block.thinkingSignature;
        const redacted = block.type === "thinking" ? block.redacted : undefined;
        const same = sent !== undefined && sent.t === block.type && !sent.replaced && text.length >= sent.text.length;
        const append = same ? text.slice(sent.text.length) : undefined;
        const signatureChanged = sent?.t === block.type && (sent.signature !== signature || sent.redacted !== redacted);
        if (same && append === "" && !signatureChanged) return undefined;
        this.#sent[index] = { t: block.type, text, replaced: false, ...(signature !== undefined && { signature }), ...(redacted !== undefined && { redacted }) };
        const base = same ? (append ? { append } : {}) : { replace: text };
        return block.type === "text"
          ? { i: index, t: "text", ...base, ...(signature !== undefined && { textSignature: signature }) }
          : { i: index, t: "thinking", ...base, ...(signature !== undefined && { thinkingSignature: signature }), ...(redacted !== undefined && { redacted }) };
      }
      case "toolCall": {
        const args = toJsonObject(block.arguments);
        const call = JSON.stringify([block.id, block.name, args, block.thoughtSignature]);
        if (sent?.t === "toolCall" && sent.call === call) return undefined;
        this.#sent[index] = { t: "toolCall", call };
        return { i: index, t: "toolCall", id: block.id, name: block.name, arguments: args, ...(block.thoughtSignature !== undefined && { thoughtSignature: block.thoughtSignature }) };
      }
    }
  }
}
