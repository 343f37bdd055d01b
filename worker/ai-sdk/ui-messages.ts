import type { UiMessage, UiPart } from "../../schema/ai-sdk.ts";
import type { Entry } from "../../schema/entries.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { LaneSnapshot, ToolResultView } from "../../schema/lane.ts";
import type { AgentMessage, AssistantMessage, UserMessage } from "../../schema/messages.ts";

// A lane's entries as the AI SDK's `UIMessage`s (docs/ai-sdk.md): each user message is a user
// `UIMessage` with the entry's id; the assistant and tool-result messages after it are one
// assistant `UIMessage` (one `step-start` per assistant message), whose id is the id of its first
// assistant entry: the id the stream's `start` chunk names (answer-stream.ts), so a page that
// reloads and resumes replaces the message it holds instead of showing it twice. Other entries
// (compactions, summaries, custom and data entries) are not part of a chat's transcript.

/** A tool result as a tool part's `output`: its `details` when it has them, its text when it is all text, else its content. */
export function toolOutput(view: Pick<ToolResultView, "content" | "details">): JsonValue {
  if (view.details !== undefined) return view.details;
  if (view.content.every((block) => block.type === "text")) return view.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  return view.content;
}

/** A failed tool result as a tool part's `errorText`. */
export function toolErrorText(view: Pick<ToolResultView, "content">): string {
  const text = view.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  return text === "" ? "The tool failed" : text;
}

/** The text a user message carries, as the steering message part reports it. */
export function userText(message: UserMessage): string {
  return typeof message.content === "string" ? message.content : message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function userParts(message: UserMessage): UiPart[] {
  if (typeof message.content === "string") return [{ type: "text", text: message.content }];
  return message.content.map((block): UiPart => (block.type === "text" ? { type: "text", text: block.text } : { type: "file", mediaType: block.mimeType, url: `data:${block.mimeType};base64,${block.data}` }));
}

function assistantParts(message: AssistantMessage): UiPart[] {
  const parts: UiPart[] = [{ type: "step-start" }];
  for (const block of message.content) {
    if (block.type === "text") parts.push({ type: "text", text: block.text, state: "done" });
    else if (block.type === "thinking") {
      if (!block.redacted) parts.push({ type: "reasoning", text: block.thinking, state: "done" });
    } else parts.push({ type: `tool-${block.name}`, toolCallId: block.id, state: "input-available", input: block.arguments });
  }
  return parts;
}

/** The transcript's messages as `UIMessage`s, oldest first. */
export function uiMessagesOf(entries: readonly Entry[]): UiMessage[] {
  const messages: UiMessage[] = [];
  let answer: UiMessage | undefined;
  for (const entry of entries) {
    if (entry.type !== "message") continue;
    const message: AgentMessage = entry.message;
    if (message.role === "user") {
      answer = undefined;
      messages.push({ id: entry.id, role: "user", parts: userParts(message) });
    } else if (message.role === "assistant") {
      if (answer) answer.parts.push(...assistantParts(message));
      else {
        answer = { id: entry.id, role: "assistant", parts: assistantParts(message) };
        messages.push(answer);
      }
    } else if (message.role === "toolResult" && answer) {
      const index = answer.parts.findIndex((part) => "toolCallId" in part && part.toolCallId === message.toolCallId);
      const part = answer.parts[index];
      if (part && "toolCallId" in part) {
        answer.parts[index] = message.isError ? { ...part, state: "output-error", errorText: toolErrorText(message) } : { ...part, state: "output-available", output: toolOutput(message) };
      }
    }
  }
  return messages;
}

/**
 * The entries of a snapshot's transcript a page shows before resuming: all of them, except that
 * while a run is live (not suspended) only its prompt is shown of what it added, because the
 * resumed stream replays its answer from the start (answer-stream.ts).
 */
export function settledTranscript(snapshot: LaneSnapshot): Entry[] {
  const run = liveRun(snapshot);
  if (!run) return snapshot.transcript;
  const added = entriesAfter(snapshot.transcript, run.fromTipId) ?? snapshot.transcript;
  const kept = snapshot.transcript.slice(0, snapshot.transcript.length - added.length);
  for (const entry of added) {
    if (entry.type === "message" && entry.message.role !== "user") break;
    kept.push(entry);
  }
  return kept;
}

/**
 * The transcript's entries after a run's starting tip (what the run added, as far as the
 * transcript's newest part holds them); undefined when that tip is not in the transcript.
 */
export function entriesAfter(transcript: readonly Entry[], fromTipId: string | null): readonly Entry[] | undefined {
  if (fromTipId === null) return transcript;
  const start = transcript.findIndex((entry) => entry.id === fromTipId);
  return start === -1 ? undefined : transcript.slice(start + 1);
}

/** The lane's run a resumed stream follows: open, a run, not waiting out a deferred suspension. */
export function liveRun(snapshot: LaneSnapshot): NonNullable<LaneSnapshot["operation"]> | undefined {
  const operation = snapshot.operation;
  return operation && operation.kind === "run" && operation.deferred === undefined ? operation : undefined;
}
