import type { AssistantMessage as PiAssistantMessage, AssistantMessageEvent } from "@earendil-works/pi-ai";
import { ToolCallArgumentsStream } from "@earendil-works/pi-ai/utils/streaming-json";
import { type AssistantFrame, FrameCoalescer } from "../../harness/execution/frames.ts";

// A scripted provider: every method mutates the shared live partial the way pi-ai providers do, emits one
// pi-ai-shaped event to the coalescer under a fake clock, and records the frames it returns.
export class Stream {
  now = 0;
  readonly frames: AssistantFrame[] = [];
  readonly frameTimes: number[] = [];
  readonly coalescer: FrameCoalescer;
  readonly partial: PiAssistantMessage = {
    role: "assistant",
    content: [],
    api: "openai-responses",
    provider: "openai",
    model: "gpt-test",
    usage: {
      input: 3,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 3,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "pending",
    timestamp: 1000,
  };
  readonly #args = new Map<number, ToolCallArgumentsStream>();

  constructor(options: { maxChars?: number } = {}) {
    this.coalescer = new FrameCoalescer({ clock: () => this.now, ...options });
  }
  emit(event: AssistantMessageEvent): AssistantFrame | undefined {
    const frame = this.coalescer.push(event);
    if (frame !== undefined) this.#record(frame);
    return frame;
  }
  flush(): AssistantFrame | undefined {
    const frame = this.coalescer.flush();
    if (frame !== undefined) this.#record(frame);
    return frame;
  }
  #record(frame: AssistantFrame): void {
    this.frames.push(frame);
    this.frameTimes.push(this.now);
  }
  #block(i: number) {
    const block = this.partial.content[i];
    if (block === undefined) throw new Error(`no block ${i}`);
    return block;
  }
  start() {
    return this.emit({ type: "start", partial: this.partial });
  }
  textStart(i: number) {
    this.partial.content[i] = { type: "text", text: "" };
    return this.emit({ type: "text_start", contentIndex: i, partial: this.partial });
  }
  textDelta(i: number, delta: string) {
    const block = this.#block(i);
    if (block.type === "text") block.text += delta;
    return this.emit({ type: "text_delta", contentIndex: i, delta, partial: this.partial });
  }
  textEnd(i: number, extra: { textSignature?: string; content?: string } = {}) {
    const block = this.#block(i);
    if (block.type !== "text") throw new Error("not text");
    if (extra.content !== undefined) block.text = extra.content;
    if (extra.textSignature !== undefined) block.textSignature = extra.textSignature;
    return this.emit({ type: "text_end", contentIndex: i, content: block.text, partial: this.partial });
  }
  thinkingStart(i: number) {
    this.partial.content[i] = { type: "thinking", thinking: "" };
    return this.emit({ type: "thinking_start", contentIndex: i, partial: this.partial });
  }
  thinkingDelta(i: number, delta: string) {
    const block = this.#block(i);
    if (block.type === "thinking") block.thinking += delta;
    return this.emit({ type: "thinking_delta", contentIndex: i, delta, partial: this.partial });
  }
  thinkingEnd(i: number, extra: { thinkingSignature?: string; redacted?: boolean } = {}) {
    const block = this.#block(i);
    if (block.type !== "thinking") throw new Error("not thinking");
    Object.assign(block, extra);
    return this.emit({ type: "thinking_end", contentIndex: i, content: block.thinking, partial: this.partial });
  }
  toolStart(i: number, id: string, name: string) {
    this.partial.content[i] = { type: "toolCall", id, name, arguments: {} };
    this.#args.set(i, new ToolCallArgumentsStream());
    return this.emit({ type: "toolcall_start", contentIndex: i, partial: this.partial });
  }
  toolDelta(i: number, delta: string) {
    const block = this.#block(i);
    const args = this.#args.get(i);
    if (block.type === "toolCall" && args !== undefined) block.arguments = args.append(delta);
    return this.emit({ type: "toolcall_delta", contentIndex: i, delta, partial: this.partial });
  }
  toolEnd(i: number, thoughtSignature?: string) {
    const block = this.#block(i);
    const args = this.#args.get(i);
    if (block.type !== "toolCall" || args === undefined) throw new Error("not a tool call");
    Object.assign(block, args.finish());
    if (thoughtSignature !== undefined) block.thoughtSignature = thoughtSignature;
    return this.emit({ type: "toolcall_end", contentIndex: i, toolCall: block, partial: this.partial });
  }
  done() {
    return this.emit({ type: "done", reason: "stop", message: { ...this.partial, stopReason: "stop" } });
  }
  /** The live partial as a committed pending message should look. */
  expected() {
    return { ...structuredClone(this.partial), stopReason: "pending" };
  }
}
