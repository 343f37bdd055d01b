import type { HarnessEvent, ToolResultView } from "../../../../schema/lane.ts";
import type { JsonObject } from "../../../../schema/json.ts";
import { utf8Length } from "../../../../schema/utf8.ts";
import type { AssistantMessage, ToolCall, ToolResultMessage } from "../../../../schema/messages.ts";
import type { ToolOutput, ToolProgress } from "../../../execution/tools.ts";
import { operationToolMemoPrefix, pendingEntry, pendingToolOutput } from "../../../session/builtin-addresses.ts";
import type { SessionMutator } from "../../../session/mutation.ts";
import type { Write } from "../../../session/storage.ts";
import { deleteValue, setValue } from "../../../session/writes.ts";
import type { Committed } from "../../lane-command.ts";
import type { OperationState, ToolBatch, ToolCallState } from "../../types.ts";
import type { Pass } from "../pass.ts";
import { scopeOf } from "../scope.ts";
import { readCheckpoint } from "./checkpoint.ts";
import { settleOperation, type TransitionPlan } from "../transition.ts";

// What every part of the tools leaf shares (reference §4.8): the call a batch entry stands for,
// the canonical result message, and the staging commit that makes a call `outcome_ready`.

/**
 * The most a tool's result may be, as JSON text. A result becomes one entry, and an entry larger
 * than the store takes (PAYLOAD_LIMIT_BYTES) would fail the staging commit on every retry, leaving
 * the operation open for ever; a result this large would not fit a model's context either. Every
 * tool kind bounds its own results well under this (http and MCP at 256 KiB); this is the
 * engine's guarantee for any tool, a hook's replacement included.
 */
export const MAX_TOOL_RESULT_BYTES_STORED = 4 * 1024 * 1024;

export const INTERRUPTED_TOOL_MESSAGE =
  "Execution was interrupted. Any text above is the latest durable progress snapshot; newer live output may be " +
  "missing. Whether the tool's external effect happened is unknown.";

export function assistantOf(pass: Pass, batch: ToolBatch): AssistantMessage {
  const entry = pass.core.session.getEntry(batch.assistantEntryId);
  if (!entry || entry.type !== "message" || entry.message.role !== "assistant") {
    throw new Error(`Invariant: tool batch assistant ${batch.assistantEntryId} is missing`);
  }
  return entry.message;
}

export function toolCallAt(assistant: AssistantMessage, sourceIndex: number): ToolCall {
  const block = assistant.content[sourceIndex];
  if (!block || block.type !== "toolCall") throw new Error(`Invariant: no tool call at content index ${sourceIndex}`);
  return block;
}

/** The batch as it is now on the line, or undefined once the operation left this batch. */
export function liveBatch(state: OperationState, assistantEntryId: string): ToolBatch | undefined {
  return state.at === "tools" && state.batch.assistantEntryId === assistantEntryId ? state.batch : undefined;
}

export function eventBase(pass: Pass, batch: ToolBatch, call: ToolCall) {
  return { lane: pass.lane.name, runId: pass.operationId, turnId: batch.turnId, toolCallId: call.id, toolName: call.name };
}

export function resultMessage(pass: Pass, call: ToolCall, output: ToolOutput): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: output.content,
    ...(output.details !== undefined && { details: output.details }),
    ...(output.usage !== undefined && { usage: output.usage }),
    ...(output.addedToolNames !== undefined && output.addedToolNames.length > 0 && { addedToolNames: [...output.addedToolNames] }),
    isError: output.isError === true,
    timestamp: pass.core.clock(),
  };
}

/** The output, or an error result saying it was too large to keep (MAX_TOOL_RESULT_BYTES_STORED). */
function withinStoredBound(output: ToolOutput): ToolOutput {
  const bytes = utf8Length(JSON.stringify(resultView(output)));
  if (bytes <= MAX_TOOL_RESULT_BYTES_STORED) return output;
  return errorOutput(`The tool's result was ${bytes} bytes of JSON; at most ${MAX_TOOL_RESULT_BYTES_STORED} can be kept. Ask the tool for less.`);
}

export function resultView(output: ToolOutput | ToolProgress): ToolResultView {
  return {
    content: output.content,
    ...(output.details !== undefined && { details: output.details }),
    ...(output.usage !== undefined && { usage: output.usage }),
    ...("addedToolNames" in output && output.addedToolNames !== undefined && output.addedToolNames.length > 0 && { addedToolNames: output.addedToolNames }),
  };
}

export function errorOutput(text: string): ToolOutput {
  return { content: [{ type: "text", text }], isError: true };
}

/** The synthetic result of a restored effect (§4.8 "unsafe interruption"): the latest checkpoint (content, details, usage) plus the marker. */
export function interruptionOutput(m: Pick<SessionMutator, "getValue">, operationId: string, invocationId: string): ToolOutput {
  const stored = m.getValue(pendingToolOutput(operationId, invocationId))?.value;
  const checkpoint = stored ? readCheckpoint(stored) : undefined;
  return {
    content: [...(checkpoint?.content ?? []), { type: "text", text: INTERRUPTED_TOOL_MESSAGE }],
    ...(checkpoint?.details !== undefined && { details: checkpoint.details }),
    ...(checkpoint?.usage !== undefined && { usage: checkpoint.usage }),
    isError: true,
  };
}

export interface StagedOutcome {
  output: ToolOutput;
  /** A restored call settling: tags its tool_end. */
  recovery?: boolean;
  /** Immediate synthetic outcomes emit their tool_start with the tool_end (§4.8 step 5). */
  start?: { args: JsonObject };
  /** Values the call owned until now (client result) that the staging deletes. */
  extraDeletes?: Write[];
}

/**
 * The staging commit of one call (reference §4.8): `pendingEntry(result)` = the final message,
 * its checkpoint and memos deleted, the call `outcome_ready{terminate}` (forced false under
 * cancellation), then `tool_end`. Runs under cancellation too; does nothing if the call is no
 * longer planned or in flight (another writer settled it).
 */
export async function stageOutcome(pass: Pass, batchId: string, sourceIndex: number, call: ToolCall, outcome: StagedOutcome): Promise<boolean> {
  let staged = false;
  await settleOperation(pass, (m, operation): TransitionPlan => {
    const batch = liveBatch(operation.state, batchId);
    const index = batch?.calls.findIndex((candidate) => candidate.sourceIndex === sourceIndex) ?? -1;
    const current = batch?.calls[index];
    if (!batch || !current || (current.status !== "planned" && current.status !== "effect_pending")) return { kind: "return" };
    const cancelled = operation.state.control.status === "cancel_requested";
    const output = withinStoredBound(outcome.output);
    const message = resultMessage(pass, call, output);
    const terminate = !cancelled && output.terminate === true;
    const invocationId = current.resultEntryId;
    const memos = m.scanValues(operationToolMemoPrefix(pass.operationId, invocationId)).map((stored) => deleteValue(stored.address));
    const writes: Write[] = [
      setValue(pendingEntry(invocationId), { type: "message", payload: message }),
      ...(m.getValue(pendingToolOutput(pass.operationId, invocationId)) ? [deleteValue(pendingToolOutput(pass.operationId, invocationId))] : []),
      ...memos,
      ...(outcome.extraDeletes ?? []),
    ];
    const calls: ToolCallState[] = batch.calls.with(index, { sourceIndex, resultEntryId: invocationId, status: "outcome_ready", terminate });
    const base = eventBase(pass, batch, call);
    const events = (_done: Committed | undefined): HarnessEvent[] => [
      ...(outcome.start ? [{ type: "tool_start" as const, ...base, args: outcome.start.args }] : []),
      { type: "tool_end", ...base, result: resultView(output), isError: message.isError, terminate, ...(outcome.recovery && { recovery: true as const }) },
    ];
    staged = true;
    return { kind: "commit", writes, state: { ...scopeOf(operation.state), at: "tools", batch: { ...batch, calls } }, events };
  });
  return staged;
}
