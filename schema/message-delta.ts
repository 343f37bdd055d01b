import type { JsonObject } from "./json.ts";
import type { AssistantMessage } from "./messages.ts";
import type { Usage } from "./usage.ts";

// The wire form of a streaming update (`message_update`): what changed in the response since the
// previous update, or since the snapshot or `message_start` a watcher started from — never the
// whole message again, so a long answer costs each socket about its own size, not its square.
// Text and thinking grow by appended text; a tool call's arguments (small, parsed as they stream)
// come whole when they changed. `applyMessageDelta` is the pure fold of one delta.

/** One changed content block at index `i`; a block of another type (or a new index) starts empty. */
export type DeltaBlock =
  | { i: number; t: "text"; append?: string; replace?: string; textSignature?: string }
  | { i: number; t: "thinking"; append?: string; replace?: string; thinkingSignature?: string; redacted?: boolean }
  | { i: number; t: "toolCall"; id: string; name: string; arguments: JsonObject; thoughtSignature?: string };

export interface MessageDelta {
  blocks: DeltaBlock[];
  /** Usage so far, when it changed. */
  usage?: Usage;
  /** The provider's response id and model, when they became known or changed. */
  responseId?: string;
  responseModel?: string;
}

type Content = AssistantMessage["content"][number];

/** The streaming message after one delta; the input is never mutated (changed paths are copied). */
export function applyMessageDelta(message: AssistantMessage, delta: MessageDelta): AssistantMessage {
  const content = [...message.content];
  for (const block of delta.blocks) {
    const current = content[block.i];
    // Indices are dense in a streaming message: a hole would be a protocol defect; fill it with empty text.
    for (let index = content.length; index < block.i; index++) content.push({ type: "text", text: "" });
    content[block.i] = applyBlock(current, block);
  }
  const header = {
    ...(delta.usage !== undefined && { usage: delta.usage }),
    ...(delta.responseId !== undefined && { responseId: delta.responseId }),
    ...(delta.responseModel !== undefined && { responseModel: delta.responseModel }),
  };
  return Object.assign({}, message, header, { content });
}

function applyBlock(current: Content | undefined, block: DeltaBlock): Content {
  switch (block.t) {
    case "text": {
      const before = current?.type === "text" ? current : { type: "text" as const, text: "" };
      const text = block.replace ?? before.text + (block.append ?? "");
      return { ...before, text, ...(block.textSignature !== undefined && { textSignature: block.textSignature }) };
    }
    case "thinking": {
      const before = current?.type === "thinking" ? current : { type: "thinking" as const, thinking: "" };
      const thinking = block.replace ?? before.thinking + (block.append ?? "");
      return {
        ...before,
        thinking,
        ...(block.thinkingSignature !== undefined && { thinkingSignature: block.thinkingSignature }),
        ...(block.redacted !== undefined && { redacted: block.redacted }),
      };
    }
    case "toolCall":
      return {
        type: "toolCall",
        id: block.id,
        name: block.name,
        arguments: block.arguments,
        ...(block.thoughtSignature !== undefined && { thoughtSignature: block.thoughtSignature }),
      };
  }
}
