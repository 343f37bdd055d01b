import type { UiChunk } from "../../schema/ai-sdk.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { HarnessEvent, LaneSnapshot, ToolResultView } from "../../schema/lane.ts";
import type { DeltaBlock } from "../../schema/message-delta.ts";
import type { AgentMessage, AssistantMessage, UserMessage } from "../../schema/messages.ts";
import { entriesAfter, liveRun, toolErrorText, toolOutput, userText } from "./ui-messages.ts";

// One run's answer as the AI SDK's UI-message stream (docs/ai-sdk.md): the lane's watch events of
// that run, translated as they arrive. Pure: no I/O, so the route (worker/routes/ai-sdk.ts) only
// relays what this returns.
//
// - The answer's message id is the id of its first assistant entry (as `GET …/ai-sdk/messages`
//   names it, ui-messages.ts). It is known at the run's first streamed update, so chunks before
//   it are held and `start` leads them.
// - Each assistant message is a step (`start-step` … `finish-step`); its text and thinking blocks
//   are text and reasoning parts grown by deltas; its tool calls are tool parts, their results
//   tool outputs.
// - A tool call becomes a part when it starts (`tool_start`), when it is known who runs it: a call
//   the service runs is `providerExecuted`, so the page's `onToolCall` sees only its own (client)
//   calls, and the AI SDK's `lastAssistantMessageIsCompleteWithToolCalls` waits only for those. A
//   call held back behind a client call (a sequential batch) is not shown until it starts.
// - The stream ends at the run's end, at a deferred suspension, and when the run waits on the page:
//   a client call waits, no server call runs, and every call of the step has started or is held
//   back behind a client call (so the server calls' outputs are in the answer). The page answers
//   (`addToolOutput`) and posts again; the same message continues.

type TextBlock = { kind: "text" | "reasoning"; id: string; text: string; open: boolean };
type ToolBlock = { kind: "tool"; toolCallId: string; toolName: string };
type Block = TextBlock | ToolBlock;
type KnownCall = { toolName: string; input: JsonValue };

export interface AnswerStreamOptions {
  /** The message's id when the page already holds it (a continuation after client-tool results). */
  messageId?: string;
  /** Steps the page's message already has (part ids stay unique within the message). */
  firstStep?: number;
}

export class AnswerStream {
  private started = false;
  private held: UiChunk[] = [];
  private step: number;
  private inStep = false;
  private blocks: Block[] = [];
  private sawAssistant = false;
  private readonly announced = new Set<string>();
  private readonly serverTools = new Set<string>();
  private readonly clientTools = new Set<string>();
  /** The calls of the current step's message, by id, in source order. */
  private stepCalls = new Map<string, KnownCall>();
  /** A waiting client call of the step holds the calls after it back (a sequential batch). */
  private heldBack = false;
  private finished = false;
  /** Set by the run's first event: entries added before it are another operation's. */
  private live = false;

  constructor(
    readonly operationId: string,
    options: AnswerStreamOptions = {},
  ) {
    this.step = options.firstStep ?? 0;
    if (options.messageId !== undefined) {
      this.started = true;
      this.held = [{ type: "start", messageId: options.messageId }];
    }
  }

  /** True once the run's events are followed (it is, or was, the lane's live run). */
  get following(): boolean {
    return this.live;
  }

  /** True once the stream has written its last chunk. */
  get done(): boolean {
    return this.finished;
  }

  /** The chunks one lane event adds (none for other runs' events). */
  event(event: HarnessEvent): UiChunk[] {
    if (this.finished) return [];
    const chunks: UiChunk[] = [];
    if ("runId" in event && event.runId === this.operationId) this.live = true;
    switch (event.type) {
      case "message_start":
        // A streamed response may start with content already (its first chunk).
        if (event.runId === this.operationId && event.message.role === "assistant") {
          this.beginStep(chunks);
          event.message.content.forEach((block, index) => this.grow(index, block, chunks));
        }
        break;
      case "message_update":
        if (event.runId !== this.operationId) break;
        this.learnId(event.entryId);
        for (const block of event.delta.blocks) this.applyDelta(block, chunks);
        break;
      case "message_end":
        if (event.runId !== this.operationId) break;
        if (event.message.role === "assistant") {
          if (event.entryId !== undefined) this.learnId(event.entryId);
          if (!this.inStep) this.beginStep(chunks);
          this.completeMessage(event.message, chunks);
        } else if (event.message.role === "user" && this.sawAssistant) {
          chunks.push(steering(event.entryId ?? `${this.operationId}-${this.step}`, event.message));
        }
        break;
      case "entry_added":
        if (this.live && event.entry.type === "message" && event.entry.message.role === "assistant") this.learnId(event.entry.id);
        break;
      case "tool_start":
        if (event.runId !== this.operationId) break;
        this.announce(event.toolCallId, event.toolName, event.args, event.executor !== "client", chunks);
        (event.executor === "client" ? this.clientTools : this.serverTools).add(event.toolCallId);
        if (event.holdsBack) this.heldBack = true;
        break;
      case "tool_end":
        // A stream that joined the run later (a message handed to it, `ifBusy: "steer"`) never
        // showed this call: the AI SDK's reader refuses the output of a call it does not know.
        if (event.runId !== this.operationId || !this.announced.has(event.toolCallId)) break;
        this.serverTools.delete(event.toolCallId);
        this.clientTools.delete(event.toolCallId);
        chunks.push(outputChunk(event.toolCallId, event.result, event.isError));
        break;
      case "run_suspend":
        if (event.runId === this.operationId) this.finish(chunks, { type: "finish", finishReason: "other" });
        break;
      case "run_end":
        if (event.runId !== this.operationId) break;
        if (event.status === "completed") this.finish(chunks, { type: "finish", finishReason: "stop" });
        else if (event.status === "aborted") this.finish(chunks, { type: "abort", reason: event.error?.message ?? "aborted" });
        else this.finish(chunks, { type: "error", errorText: event.error?.message ?? "The run failed" }, { type: "finish", finishReason: "error" });
        break;
      default:
        break;
    }
    this.endIfWaitingOnClient(chunks);
    return this.emit(chunks);
  }

  /**
   * The run's answer so far, from a snapshot (a resumed stream): the entries it committed after its
   * start, its tool calls running or done, and the message it is streaming. Events after the
   * snapshot's seq continue from here.
   */
  replay(snapshot: LaneSnapshot): UiChunk[] {
    const run = liveRun(snapshot);
    const chunks: UiChunk[] = [];
    // Not (or no longer) the lane's live run: its events, if any are to come, tell the rest.
    if (!run || run.id !== this.operationId) return [];
    this.live = true;
    // A run whose start left the transcript's newest part added all of it.
    for (const entry of entriesAfter(snapshot.transcript, run.fromTipId) ?? snapshot.transcript) {
      if (entry.type !== "message") continue;
      const message = entry.message;
      if (message.role === "assistant") {
        this.learnId(entry.id);
        this.beginStep(chunks);
        this.completeMessage(message, chunks);
      } else if (message.role === "toolResult") {
        this.placedResult(message.toolCallId, message, message.isError, chunks);
      } else if (message.role === "user" && this.sawAssistant) {
        chunks.push(steering(entry.id, message));
      }
    }
    for (const row of run.runningTools) {
      const waitsOnClient = row.status === "running" && row.executor === "client";
      this.announce(row.toolCallId, row.toolName, row.args, !waitsOnClient, chunks);
      if (row.status === "settled") chunks.push(outputChunk(row.toolCallId, row.result, row.isError));
      else (waitsOnClient ? this.clientTools : this.serverTools).add(row.toolCallId);
    }
    // A snapshot does not say whether the step's calls not yet started are held back behind a
    // waiting client call or about to start (a parallel batch starts them all at once): taken as
    // held, the answer ends as the run waits on the page.
    if (this.clientTools.size > 0) this.heldBack = true;
    if (run.streamingMessage) {
      this.beginStep(chunks);
      run.streamingMessage.content.forEach((block, index) => this.grow(index, block, chunks));
    }
    this.endIfWaitingOnClient(chunks);
    return this.emit(chunks);
  }

  /**
   * A settled run's answer from its messages (a repeated request for a run that already ended):
   * the same parts its live stream had, ended as the run ended.
   */
  replaySettled(messages: readonly AgentMessage[], status: string, errorText: string | undefined): UiChunk[] {
    const chunks: UiChunk[] = [];
    for (const message of messages) {
      if (message.role === "assistant") {
        this.beginStep(chunks);
        this.completeMessage(message, chunks);
      } else if (message.role === "toolResult") this.placedResult(message.toolCallId, message, message.isError, chunks);
    }
    if (status === "completed") this.finish(chunks, { type: "finish", finishReason: "stop" });
    else if (status === "aborted") this.finish(chunks, { type: "abort", reason: errorText ?? "aborted" });
    else this.finish(chunks, { type: "error", errorText: errorText ?? "The run failed" }, { type: "finish", finishReason: "error" });
    return this.emit(chunks);
  }

  /** The stream's last chunks when it ends for another reason (the watch closed): the answer so far, finished. */
  close(errorText: string): UiChunk[] {
    const chunks: UiChunk[] = [];
    this.finish(chunks, { type: "error", errorText }, { type: "finish", finishReason: "error" });
    return this.emit(chunks);
  }

  private emit(chunks: UiChunk[]): UiChunk[] {
    if (!this.started && !this.finished) {
      this.held.push(...chunks);
      return [];
    }
    const out = [...this.held, ...chunks];
    this.held = [];
    return out;
  }

  private learnId(entryId: string): void {
    if (this.started) return;
    this.started = true;
    this.held.unshift({ type: "start", messageId: entryId });
  }

  private beginStep(chunks: UiChunk[]): void {
    this.endStep(chunks);
    this.sawAssistant = true;
    this.inStep = true;
    this.step += 1;
    this.blocks = [];
    this.stepCalls = new Map();
    this.heldBack = false;
    chunks.push({ type: "start-step" });
  }

  private endStep(chunks: UiChunk[]): void {
    if (!this.inStep) return;
    for (const block of this.blocks) if (block.kind !== "tool") this.endText(block, chunks);
    chunks.push({ type: "finish-step" });
    this.inStep = false;
  }

  private applyDelta(block: DeltaBlock, chunks: UiChunk[]): void {
    if (!this.inStep) this.beginStep(chunks);
    if (block.t === "toolCall") {
      this.toolBlock(block.i, block.id, block.name, chunks);
      return;
    }
    const current = this.textBlock(block.i, block.t === "text" ? "text" : "reasoning", chunks);
    this.growText(current, block.replace ?? current.text + (block.append ?? ""), chunks);
  }

  /** One content block of the message at `index`, grown to what it holds (not ended). */
  private grow(index: number, block: AssistantMessage["content"][number], chunks: UiChunk[]): void {
    if (block.type === "toolCall") this.toolBlock(index, block.id, block.name, chunks);
    else if (block.type === "text") this.growText(this.textBlock(index, "text", chunks), block.text, chunks);
    else if (!block.redacted) this.growText(this.textBlock(index, "reasoning", chunks), block.thinking, chunks);
  }

  /** The message as committed: every block grown to its final content and ended; its tool calls known (shown as they start). */
  private completeMessage(message: AssistantMessage, chunks: UiChunk[]): void {
    message.content.forEach((block, index) => {
      this.grow(index, block, chunks);
      const current = this.blocks[index];
      if (current && current.kind !== "tool") this.endText(current, chunks);
      if (block.type === "toolCall") this.stepCalls.set(block.id, { toolName: block.name, input: block.arguments });
    });
  }

  /** A result placed in the transcript (a replay): its call, run by now, shown with it. */
  private placedResult(toolCallId: string, result: Pick<ToolResultView, "content" | "details">, isError: boolean, chunks: UiChunk[]): void {
    const call = this.stepCalls.get(toolCallId);
    if (call) this.announce(toolCallId, call.toolName, call.input, true, chunks);
    if (this.announced.has(toolCallId)) chunks.push(outputChunk(toolCallId, result, isError));
  }

  private textBlock(index: number, kind: TextBlock["kind"], chunks: UiChunk[]): TextBlock {
    const current = this.blocks[index];
    if (current && current.kind === kind) return current;
    if (current && current.kind !== "tool") this.endText(current, chunks);
    const created: TextBlock = { kind, id: `${kind === "text" ? "t" : "r"}${this.step}.${index}`, text: "", open: false };
    this.blocks[index] = created;
    return created;
  }

  /** A tool call's block: it ends the text before it; the call itself is shown when it starts. */
  private toolBlock(index: number, toolCallId: string, toolName: string, chunks: UiChunk[]): void {
    const current = this.blocks[index];
    if (current?.kind === "tool" && current.toolCallId === toolCallId) return;
    if (current && current.kind !== "tool") this.endText(current, chunks);
    this.blocks[index] = { kind: "tool", toolCallId, toolName };
  }

  /** Text grows by appending; a rewrite that does not extend what was sent (rare) is not re-sent. */
  private growText(block: TextBlock, next: string, chunks: UiChunk[]): void {
    if (!block.open) {
      block.open = true;
      chunks.push(block.kind === "text" ? { type: "text-start", id: block.id } : { type: "reasoning-start", id: block.id });
    }
    if (next.startsWith(block.text) && next.length > block.text.length) {
      const delta = next.slice(block.text.length);
      chunks.push(block.kind === "text" ? { type: "text-delta", id: block.id, delta } : { type: "reasoning-delta", id: block.id, delta });
    }
    block.text = next;
  }

  private endText(block: TextBlock, chunks: UiChunk[]): void {
    if (!block.open) return;
    block.open = false;
    chunks.push(block.kind === "text" ? { type: "text-end", id: block.id } : { type: "reasoning-end", id: block.id });
  }

  /** A tool call's complete input, once (a recovered `tool_start` repeats it); `providerExecuted` unless the page runs it. */
  private announce(toolCallId: string, toolName: string, input: JsonValue, providerExecuted: boolean, chunks: UiChunk[]): void {
    if (this.announced.has(toolCallId)) return;
    this.announced.add(toolCallId);
    chunks.push({ type: "tool-input-available", toolCallId, toolName, input, ...(providerExecuted && { providerExecuted }) });
  }

  /** The run waits on the page alone: a client call waits, no server call runs, and none of the step's is still to start. */
  private endIfWaitingOnClient(chunks: UiChunk[]): void {
    if (this.finished || this.clientTools.size === 0 || this.serverTools.size > 0) return;
    // A call is announced when it starts (or shows with its result): one not announced is still to start.
    const toStart = [...this.stepCalls.keys()].some((toolCallId) => !this.announced.has(toolCallId));
    if (toStart && !this.heldBack) return;
    this.finish(chunks, { type: "finish", finishReason: "tool-calls" });
  }

  private finish(chunks: UiChunk[], ...last: UiChunk[]): void {
    if (this.finished) return;
    this.endStep(chunks);
    chunks.push(...last);
    this.finished = true;
    if (!this.started) {
      this.started = true;
      this.held.unshift({ type: "start" });
    }
  }
}

function outputChunk(toolCallId: string, result: Pick<ToolResultView, "content" | "details">, isError: boolean): UiChunk {
  return isError ? { type: "tool-output-error", toolCallId, errorText: toolErrorText(result) } : { type: "tool-output-available", toolCallId, output: toolOutput(result) };
}

function steering(id: string, message: UserMessage): UiChunk {
  return { type: "steering-message", id, parts: [{ type: "text", text: userText(message) }] };
}
