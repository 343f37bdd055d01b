import type {
  AssistantMessage as PiAssistantMessage,
  AssistantMessageEvent,
  ToolCall as PiToolCall,
} from "@earendil-works/pi-ai";
import type { JsonObject } from "../../schema/json.ts";
import type { Usage } from "../../schema/usage.ts";
import { toJsonObject } from "./pi-json.ts";
import { type Clock, systemClock } from "./frames-throttle.ts";

// Streaming persistence (ARCHITECTURE D10, reference §7.1 "Frames"). A response's progress is persisted as a list
// of compact, JSON-safe frames; folding them in order (`reduceFrames`, frame-reducer.ts) gives the latest committed
// partial, which crash recovery turns into the unknown-outcome response (reference §4.6). `FrameCoalescer` decides
// when a frame is due: the start immediately, then at most one per 250 ms or per 8 KB of new content. The wire
// throttle for live updates is in frames-throttle.ts. Runtime-neutral: no timers, no platform imports.

export { type Clock, UpdateThrottle, WIRE_UPDATE_INTERVAL_MS } from "./frames-throttle.ts";

export const FRAME_INTERVAL_MS = 250;
export const FRAME_MAX_CHARS = 8192;

/** The response header as of `start`: everything of the partial except content and stop reason. */
export interface FrameHeader {
  api: string;
  provider: string;
  model: string;
  timestamp: number;
  usage: Usage;
  responseId?: string;
  responseModel?: string;
  providerThinkingLevel?: string;
  thinkingLevel?: string;
}
/** Header fields that providers fill in after `start`; carried by the next delta frame when they change. */
export type FrameHeaderPatch = Pick<FrameHeader, "responseId" | "responseModel">;

/** Final fields of a text block. `text` is present only when it differs from the appended deltas (a replacement). */
export interface TextBlockEnd {
  text?: string;
  textSignature?: string;
}
/** Final fields of a thinking block. `thinking` is present only when it differs from the appended deltas. */
export interface ThinkingBlockEnd {
  thinking?: string;
  thinkingSignature?: string;
  redacted?: boolean;
}
/** The finished tool call, with its arguments parsed once by the provider. */
export interface ToolCallBlockEnd {
  id: string;
  name: string;
  arguments: JsonObject;
  thoughtSignature?: string;
  namespace?: string;
  argumentsError?: string;
}

/** What one frame adds to the content block at index `i`; a block first seen (or of another type) starts empty. */
export type FrameBlock =
  | { i: number; t: "text"; text?: string; end?: TextBlockEnd }
  | { i: number; t: "thinking"; text?: string; end?: ThinkingBlockEnd }
  | { i: number; t: "toolCall"; id?: string; name?: string; args?: string; end?: ToolCallBlockEnd };
export type FrameBlockType = FrameBlock["t"];

/**
 * One durable progress frame. `text` and `args` are appended (args: raw JSON text of the tool call arguments);
 * `end` carries the block's final fields. A tool call's raw args pending when it ends are not framed: `end` has them.
 */
export type AssistantFrame =
  | { k: "start"; message: FrameHeader; blocks?: FrameBlock[] }
  | { k: "delta"; blocks: FrameBlock[]; header?: FrameHeaderPatch };

export interface FrameCoalescerOptions {
  clock?: Clock;
  /** Minimum time between two frames, measured from the previous frame (non-resetting). */
  intervalMs?: number;
  /** New content (characters) that makes a frame due before the interval has passed. */
  maxChars?: number;
}

interface BlockTrack {
  t: FrameBlockType;
  /** Text or thinking appended so far, to decide whether `end` must carry a replacement. */
  acc: string;
  id?: string;
  name?: string;
}

/**
 * Turns the events of one response into frames. `push` every event in order and persist each returned frame;
 * call `flush` at settlement for the unpersisted remainder. Terminal `done`/`error` events are never framed.
 * Frames never alias the live partial. Without timers: a due frame is produced by the next `push` (or `poll`).
 */
export class FrameCoalescer {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #maxChars: number;
  #started = false;
  /** The start header, framed together with the first window's content (not on its own). */
  #pendingStart: FrameHeader | undefined;
  #lastFrameAt = 0;
  #header: FrameHeaderPatch = {};
  #tracks = new Map<number, BlockTrack>();
  /** The frame blocks being built since the last frame, by content index. */
  #pending = new Map<number, FrameBlock>();
  #pendingHeader: FrameHeaderPatch | undefined;
  #pendingChars = 0;

  constructor(options: FrameCoalescerOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#intervalMs = options.intervalMs ?? FRAME_INTERVAL_MS;
    this.#maxChars = options.maxChars ?? FRAME_MAX_CHARS;
  }

  push(event: AssistantMessageEvent): AssistantFrame | undefined {
    if (event.type === "done" || event.type === "error") return undefined;
    if (!this.#started) {
      // An update before `start` is a protocol defect; its partial still names api/provider/model.
      this.#start(event.partial);
      if (event.type !== "start") this.#apply(event);
      return this.poll();
    }
    this.#apply(event);
    return this.poll();
  }

  /** The pending frame if one is due now (for a caller that also checks on a timer). */
  poll(): AssistantFrame | undefined {
    if (!this.#hasPending()) return undefined;
    const now = this.#clock();
    if (this.#pendingChars < this.#maxChars && now - this.#lastFrameAt < this.#intervalMs) return undefined;
    return this.#take(now);
  }

  /** Whatever is not yet framed, regardless of the window; undefined when nothing is pending. */
  flush(): AssistantFrame | undefined {
    return this.#hasPending() ? this.#take(this.#clock()) : undefined;
  }

  /**
   * The stream's first window starts now. The header waits for it: a response that settles within
   * one window needs no progress frame at all (its settlement commit holds the whole message).
   */
  #start(partial: PiAssistantMessage): void {
    this.#started = true;
    this.#lastFrameAt = this.#clock();
    const message: FrameHeader = {
      api: partial.api,
      provider: partial.provider,
      model: partial.model,
      timestamp: partial.timestamp,
      usage: structuredClone(partial.usage),
    };
    if (partial.responseId !== undefined) message.responseId = partial.responseId;
    if (partial.responseModel !== undefined) message.responseModel = partial.responseModel;
    if (partial.providerThinkingLevel !== undefined) message.providerThinkingLevel = partial.providerThinkingLevel;
    if (partial.thinkingLevel !== undefined) message.thinkingLevel = partial.thinkingLevel;
    this.#header = { responseId: partial.responseId, responseModel: partial.responseModel };
    this.#pendingStart = message;
  }

  #apply(event: Exclude<AssistantMessageEvent, { type: "done" | "error" }>): void {
    this.#syncHeader(event.partial);
    switch (event.type) {
      case "start":
        return;
      case "text_start":
      case "thinking_start":
        this.#block(event.contentIndex, event.type === "text_start" ? "text" : "thinking");
        return;
      case "text_delta":
      case "thinking_delta": {
        const [track, pending] = this.#block(event.contentIndex, event.type === "text_delta" ? "text" : "thinking");
        if (pending.t === "toolCall") return;
        track.acc += event.delta;
        pending.text = (pending.text ?? "") + event.delta;
        this.#pendingChars += event.delta.length;
        return;
      }
      case "text_end": {
        const [track, pending] = this.#block(event.contentIndex, "text");
        if (pending.t !== "text") return;
        const end: TextBlockEnd = {};
        if (event.content !== track.acc) end.text = this.#replace(track, event.content);
        const block = event.partial.content[event.contentIndex];
        if (block?.type === "text" && block.textSignature !== undefined) end.textSignature = block.textSignature;
        pending.end = end;
        return;
      }
      case "thinking_end": {
        const [track, pending] = this.#block(event.contentIndex, "thinking");
        if (pending.t !== "thinking") return;
        const end: ThinkingBlockEnd = {};
        if (event.content !== track.acc) end.thinking = this.#replace(track, event.content);
        const block = event.partial.content[event.contentIndex];
        if (block?.type === "thinking") {
          if (block.thinkingSignature !== undefined) end.thinkingSignature = block.thinkingSignature;
          if (block.redacted !== undefined) end.redacted = block.redacted;
        }
        pending.end = end;
        return;
      }
      case "toolcall_start":
      case "toolcall_delta": {
        const [track, pending] = this.#block(event.contentIndex, "toolCall");
        if (pending.t !== "toolCall") return;
        const block = event.partial.content[event.contentIndex];
        if (block?.type === "toolCall") {
          if (block.id !== track.id) pending.id = track.id = block.id;
          if (block.name !== track.name) pending.name = track.name = block.name;
        }
        if (event.type === "toolcall_delta" && event.delta !== "") {
          pending.args = (pending.args ?? "") + event.delta;
          this.#pendingChars += event.delta.length;
        }
        return;
      }
      case "toolcall_end": {
        const [track, pending] = this.#block(event.contentIndex, "toolCall");
        if (pending.t !== "toolCall") return;
        // The parsed arguments supersede the raw text still pending; id and name travel in `end`.
        delete pending.args;
        pending.end = toolCallEnd(event.toolCall);
        track.id = event.toolCall.id;
        track.name = event.toolCall.name;
        return;
      }
    }
  }

  /** Records a final text that differs from the deltas (a replacement); returns it. */
  #replace(track: BlockTrack, content: string): string {
    track.acc = content;
    this.#pendingChars += content.length;
    return content;
  }

  #block(index: number, t: FrameBlockType): [BlockTrack, FrameBlock] {
    let track = this.#tracks.get(index);
    if (track === undefined || track.t !== t) {
      track = { t, acc: "" };
      this.#tracks.set(index, track);
    }
    const current = this.#pending.get(index);
    if (current !== undefined && current.t === t) return [track, current];
    const pending: FrameBlock = { i: index, t };
    this.#pending.set(index, pending);
    return [track, pending];
  }

  #syncHeader(partial: PiAssistantMessage): void {
    for (const key of ["responseId", "responseModel"] as const) {
      const current = partial[key];
      if (current === undefined || current === this.#header[key]) continue;
      this.#header[key] = current;
      this.#pendingHeader = { ...this.#pendingHeader, [key]: current };
    }
  }

  #hasPending(): boolean {
    return this.#pendingStart !== undefined || this.#pending.size > 0 || this.#pendingHeader !== undefined;
  }

  #take(now: number): AssistantFrame {
    const blocks = [...this.#pending.values()];
    let frame: AssistantFrame;
    if (this.#pendingStart !== undefined) {
      const message: FrameHeader = { ...this.#pendingStart, ...definedHeader(this.#pendingHeader) };
      frame = blocks.length > 0 ? { k: "start", message, blocks } : { k: "start", message };
      this.#pendingStart = undefined;
    } else {
      frame = { k: "delta", blocks };
      if (this.#pendingHeader !== undefined) frame.header = this.#pendingHeader;
    }
    this.#pending = new Map();
    this.#pendingHeader = undefined;
    this.#pendingChars = 0;
    this.#lastFrameAt = now;
    return frame;
  }
}

function definedHeader(patch: FrameHeaderPatch | undefined): FrameHeaderPatch {
  const defined: FrameHeaderPatch = {};
  if (patch?.responseId !== undefined) defined.responseId = patch.responseId;
  if (patch?.responseModel !== undefined) defined.responseModel = patch.responseModel;
  return defined;
}

function toolCallEnd(call: PiToolCall): ToolCallBlockEnd {
  const end: ToolCallBlockEnd = { id: call.id, name: call.name, arguments: toJsonObject(call.arguments) };
  if (call.thoughtSignature !== undefined) end.thoughtSignature = call.thoughtSignature;
  if (call.namespace !== undefined) end.namespace = call.namespace;
  if (call.argumentsError !== undefined) end.argumentsError = call.argumentsError;
  return end;
}
