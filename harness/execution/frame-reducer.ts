import { ToolCallArgumentsStream } from "@earendil-works/pi-ai/utils/streaming-json";
import type { AssistantMessage } from "../../schema/messages.ts";
import type {
  AssistantFrame,
  FrameBlock,
  FrameHeader,
  TextBlockEnd,
  ThinkingBlockEnd,
  ToolCallBlockEnd,
} from "./frames.ts";
import { toJsonObject } from "./pi-json.ts";

type Content = AssistantMessage["content"][number];

type BlockState =
  | { t: "text"; text: string; end?: TextBlockEnd }
  | { t: "thinking"; text: string; end?: ThinkingBlockEnd }
  | { t: "toolCall"; id: string; name: string; args: string; end?: ToolCallBlockEnd };

/**
 * Folds frames (in list order) into the latest committed partial: a pending assistant message, or undefined without
 * a start frame. A later start frame starts over. Blocks come out in content-index order, holes closed. A tool call
 * that has not ended gets its arguments from the raw text with pi-ai's streaming parser (the one providers use for
 * the live partial); an ended one gets the provider's parsed arguments. Never mutates or aliases its input.
 */
export function reduceFrames(frames: readonly AssistantFrame[]): AssistantMessage | undefined {
  let header: FrameHeader | undefined;
  let blocks = new Map<number, BlockState>();
  for (const frame of frames) {
    if (frame.k === "start") {
      header = { ...frame.message };
      blocks = new Map();
      for (const block of frame.blocks ?? []) applyBlock(blocks, block);
      continue;
    }
    if (header === undefined) continue;
    if (frame.header?.responseId !== undefined) header.responseId = frame.header.responseId;
    if (frame.header?.responseModel !== undefined) header.responseModel = frame.header.responseModel;
    for (const block of frame.blocks) applyBlock(blocks, block);
  }
  if (header === undefined) return undefined;
  const { usage, ...rest } = header;
  const content = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, state]) => toContent(state));
  return { role: "assistant", ...rest, content, usage: structuredClone(usage), stopReason: "pending" };
}

function applyBlock(blocks: Map<number, BlockState>, block: FrameBlock): void {
  const current = blocks.get(block.i);
  switch (block.t) {
    case "text": {
      const state = current?.t === "text" ? current : { t: "text" as const, text: "" };
      state.text += block.text ?? "";
      if (block.end !== undefined) {
        if (block.end.text !== undefined) state.text = block.end.text;
        state.end = block.end;
      }
      blocks.set(block.i, state);
      return;
    }
    case "thinking": {
      const state = current?.t === "thinking" ? current : { t: "thinking" as const, text: "" };
      state.text += block.text ?? "";
      if (block.end !== undefined) {
        if (block.end.thinking !== undefined) state.text = block.end.thinking;
        state.end = block.end;
      }
      blocks.set(block.i, state);
      return;
    }
    case "toolCall": {
      const state = current?.t === "toolCall" ? current : { t: "toolCall" as const, id: "", name: "", args: "" };
      if (block.id !== undefined) state.id = block.id;
      if (block.name !== undefined) state.name = block.name;
      state.args += block.args ?? "";
      if (block.end !== undefined) {
        state.id = block.end.id;
        state.name = block.end.name;
        state.end = block.end;
      }
      blocks.set(block.i, state);
      return;
    }
  }
}

function toContent(state: BlockState): Content {
  switch (state.t) {
    case "text": {
      const content: Content = { type: "text", text: state.text };
      if (state.end?.textSignature !== undefined) content.textSignature = state.end.textSignature;
      return content;
    }
    case "thinking": {
      const content: Content = { type: "thinking", thinking: state.text };
      if (state.end?.thinkingSignature !== undefined) content.thinkingSignature = state.end.thinkingSignature;
      if (state.end?.redacted !== undefined) content.redacted = state.end.redacted;
      return content;
    }
    case "toolCall": {
      if (state.end !== undefined) {
        const { id, name, arguments: args, ...extra } = state.end;
        return { type: "toolCall", id, name, arguments: structuredClone(args), ...extra };
      }
      const partial = new ToolCallArgumentsStream().append(state.args);
      return { type: "toolCall", id: state.id, name: state.name, arguments: toJsonObject(partial) };
    }
  }
}
