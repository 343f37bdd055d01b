import type { JsonObject } from "../../schema/json.ts";
import type { HarnessCore } from "./core.ts";
import { clientToolResult } from "../session/builtin-addresses.ts";
import { setValue } from "../session/writes.ts";
import { err, ok, type LaneError, type Result } from "./errors.ts";
import type { Planner } from "./lane-command.ts";

/**
 * A client tool's result, posted from outside (ARCHITECTURE D11). Decided on the line: the call
 * must be the current operation's, in flight, a client call, and without a result yet (a second
 * post, or one after the call's deadline, is a conflict). The result is stored beside the call —
 * only the run's own pass moves the call (it stages the result when it next runs), so the engine
 * keeps one writer of operation state — and a pass is made due in the same commit, so the run
 * resumes even if this process dies now.
 */
export function planSubmitToolResult(core: HarnessCore, lane: string, operationId: string, toolCallId: string, result: JsonObject): Planner<Result<{ accepted: true }>> {
  return (m, state) => {
    const operation = state.operation;
    if (operation?.meta.operationId !== operationId) {
      const mismatch: LaneError = {
        code: "OperationMismatch",
        lane,
        expectedOperationId: operationId,
        ...(operation && { currentOperationId: operation.meta.operationId }),
        ...(state.lastOperationId !== null && { lastOperationId: state.lastOperationId }),
      };
      return { writes: [], value: err(mismatch) };
    }
    const leaf = operation.state;
    const unknown = { writes: [], value: err({ code: "UnknownToolCall" as const, operationId, toolCallId }) };
    if (leaf.at !== "tools") return unknown;
    const assistant = m.getEntries([leaf.batch.assistantEntryId]).get(leaf.batch.assistantEntryId);
    if (assistant?.type !== "message" || assistant.message.role !== "assistant") return unknown;
    const content = assistant.message.content;
    const call = leaf.batch.calls.find((candidate) => {
      const block = content[candidate.sourceIndex];
      return block?.type === "toolCall" && block.id === toolCallId;
    });
    if (!call) return unknown;
    const address = clientToolResult(operationId, call.resultEntryId);
    const settled = call.status === "outcome_ready" || call.status === "completed" || m.getValue(address) !== undefined;
    if (settled) return { writes: [], value: err({ code: "ToolResultConflict" as const, operationId, toolCallId }) };
    if (call.status !== "effect_pending" || !call.client) return unknown;
    // Past its deadline the call's outcome is the timeout, even before a pass has staged it: a
    // late answer must not replace what the run was promised at the deadline.
    if (call.client.deadline !== undefined && core.clock() >= call.client.deadline) {
      return { writes: [], value: err({ code: "ToolResultConflict" as const, operationId, toolCallId, timedOut: true }) };
    }
    return {
      writes: [setValue(address, result)],
      value: ok({ accepted: true as const }),
      afterCommit: () => core.wake.due(lane, operationId, core.clock()),
    };
  };
}
