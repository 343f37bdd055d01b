import type { Entry } from "../../../schema/entries.ts";
import type { HarnessEvent } from "../../../schema/lane.ts";
import type { AssistantMessage, ToolCall, ToolResultMessage } from "../../../schema/messages.ts";
import { branchTip, operationToolArgsPrefix, pendingEntry } from "../../session/builtin-addresses.ts";
import type { Write } from "../../session/storage.ts";
import { deleteValue, insertEntry, setValue } from "../../session/writes.ts";
import { placementEvents } from "../acceptance.ts";
import type { Committed } from "../lane-command.ts";
import type { StateAt, ToolBatch, ToolCallState } from "../types.ts";
import { CONTINUE, type Pass, type Step } from "./pass.ts";
import { scopeOf } from "./scope.ts";
import { settleOperation } from "./transition.ts";

export const INTERRUPTED_TOOL_MESSAGE =
  "Execution was interrupted. Any text above is the latest durable progress snapshot; newer live output may be " +
  "missing. Whether the tool's external effect happened is unknown.";

/**
 * The `tools` leaf (reference §4.8). Calls are staged as outcomes (`outcome_ready`, payload in
 * `pendingEntry`) and then placed in source order. This build registers no tool implementations,
 * so every call settles through an immediate synthetic outcome: unknown tool, truncated arguments,
 * cancelled before completion, or (for a restored effect) interrupted.
 */
export async function runToolBatch(pass: Pass, state: StateAt<"tools">): Promise<Step> {
  const assistant = assistantOf(pass, state.batch);
  if (state.batch.calls.some((call) => call.status === "planned" || call.status === "effect_pending")) {
    await stageSyntheticOutcomes(pass, assistant);
  }
  const placed = await settleOperation(pass, (m, operation, lane) => {
    if (operation.state.at !== "tools") throw new Error("Invariant: tool placement outside the tools leaf");
    const { batch } = operation.state;
    const writes: Write[] = [];
    const calls: ToolCallState[] = [...batch.calls];
    let tipId = lane.tipId;
    let index = calls.findIndex((call) => call.status !== "completed");
    // Only the contiguous outcome_ready prefix is placed: completed calls always form a prefix.
    while (index >= 0 && index < calls.length) {
      const call = calls[index];
      if (!call || call.status !== "outcome_ready") break;
      const pending = m.getValue(pendingEntry(call.resultEntryId));
      if (!pending || pending.value.type !== "message") throw new Error(`Invariant: staged outcome ${call.resultEntryId} is missing`);
      writes.push(insertEntry({ id: call.resultEntryId, parentId: tipId, type: "message", message: pending.value.payload }));
      writes.push(deleteValue(pendingEntry(call.resultEntryId)));
      tipId = call.resultEntryId;
      calls[index] = { sourceIndex: call.sourceIndex, resultEntryId: call.resultEntryId, status: "completed", terminate: call.terminate };
      index++;
    }
    if (writes.length === 0) return { kind: "return" };
    writes.push(setValue(branchTip(pass.lane.name), tipId ?? batch.assistantEntryId));
    const done = calls.every((call) => call.status === "completed");
    const lastId = tipId ?? batch.assistantEntryId;
    const events = (committed: Committed | undefined): HarnessEvent[] => [
      ...placementEvents(pass.lane.name, pass.operationId, committed?.entries ?? []),
      ...(done ? [turnEnd(pass, batch, assistant, resultsOf(m.getEntries(calls.map((call) => call.resultEntryId)), calls))] : []),
    ];
    if (!done) {
      return { kind: "commit", writes, state: { ...scopeOf(operation.state), at: "tools", batch: { ...batch, calls } }, patch: { tipId: lastId }, events };
    }
    const toolArgs = m.scanValues(operationToolArgsPrefix(pass.operationId, batch.turnId)).map((stored) => deleteValue(stored.address));
    const terminate = calls.every((call) => call.status === "completed" && call.terminate);
    return {
      kind: "commit",
      writes: [...writes, ...toolArgs],
      state: {
        ...scopeOf(operation.state),
        at: "checkpoint",
        continuation: terminate ? { kind: "may_finish", includeFinalAssistant: false } : { kind: "need_assistant", overflowRecoveryUsed: false },
        triggerEntryId: lastId,
      },
      patch: { tipId: lastId },
      events,
    };
  });
  return typeof placed === "string" ? CONTINUE : placed;
}

/** Every result of the batch, in source order, for `turn_end`. */
function resultsOf(entries: ReadonlyMap<string, Entry>, calls: readonly ToolCallState[]): ToolResultMessage[] {
  return calls.flatMap((call) => {
    const entry = entries.get(call.resultEntryId);
    return entry?.type === "message" && entry.message.role === "toolResult" ? [entry.message] : [];
  });
}

/** One staging commit for every call that settles without executing (tool_start + tool_end each). */
async function stageSyntheticOutcomes(pass: Pass, assistant: AssistantMessage): Promise<void> {
  await settleOperation(pass, (_m, operation) => {
    if (operation.state.at !== "tools") throw new Error("Invariant: tool staging outside the tools leaf");
    const { batch } = operation.state;
    const cancelled = operation.state.control.status === "cancel_requested";
    const writes: Write[] = [];
    const events: HarnessEvent[] = [];
    const calls = batch.calls.map((call): ToolCallState => {
      if (call.status !== "planned" && call.status !== "effect_pending") return call;
      const toolCall = toolCallAt(assistant, call.sourceIndex);
      const text =
        call.status === "effect_pending"
          ? INTERRUPTED_TOOL_MESSAGE
          : cancelled
            ? "The tool call was cancelled before completion."
            : batch.truncated
              ? "The tool call was not executed because its arguments may be truncated (the response hit its output limit)."
              : `Tool ${toolCall.name} is not available.`;
      const result: ToolResultMessage = {
        role: "toolResult",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        content: [{ type: "text", text }],
        isError: true,
        timestamp: pass.core.clock(),
      };
      writes.push(setValue(pendingEntry(call.resultEntryId), { type: "message", payload: result }));
      const base = { lane: pass.lane.name, runId: pass.operationId, turnId: batch.turnId, toolCallId: toolCall.id, toolName: toolCall.name };
      const view = { content: result.content };
      if (call.status === "planned") events.push({ type: "tool_start", ...base, args: toolCall.arguments });
      events.push({ type: "tool_end", ...base, result: view, isError: true, terminate: false, ...(call.status === "effect_pending" && { recovery: true as const }) });
      return { sourceIndex: call.sourceIndex, resultEntryId: call.resultEntryId, status: "outcome_ready", terminate: false };
    });
    return { kind: "commit", writes, state: { ...scopeOf(operation.state), at: "tools", batch: { ...batch, calls } }, events: () => events };
  });
}

function assistantOf(pass: Pass, batch: ToolBatch): AssistantMessage {
  const entry = pass.core.session.getEntry(batch.assistantEntryId);
  if (!entry || entry.type !== "message" || entry.message.role !== "assistant") {
    throw new Error(`Invariant: tool batch assistant ${batch.assistantEntryId} is missing`);
  }
  return entry.message;
}

function toolCallAt(assistant: AssistantMessage, sourceIndex: number): ToolCall {
  const block = assistant.content[sourceIndex];
  if (!block || block.type !== "toolCall") throw new Error(`Invariant: no tool call at content index ${sourceIndex}`);
  return block;
}

function turnEnd(pass: Pass, batch: ToolBatch, assistant: AssistantMessage, toolResults: ToolResultMessage[]): HarnessEvent {
  return { type: "turn_end", lane: pass.lane.name, runId: pass.operationId, turnId: batch.turnId, message: assistant, toolResults };
}
