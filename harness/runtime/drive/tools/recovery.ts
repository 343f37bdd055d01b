import type { AssistantMessage } from "../../../../schema/messages.ts";
import { clientToolResult, operationToolArgs, pendingToolOutput } from "../../../session/builtin-addresses.ts";
import { deleteValue } from "../../../session/writes.ts";
import type { ToolBatch, ToolCallState } from "../../types.ts";
import { CONTINUE, type Pass } from "../pass.ts";
import { eventBase, interruptionOutput, liveBatch, stageOutcome, toolCallAt } from "./calls.ts";
import { executeCall } from "./execution.ts";
import { continueOperation } from "../transition.ts";

type PendingCall = Extract<ToolCallState, { status: "effect_pending" }>;

/**
 * A restored `effect_pending` call (reference §4.8, §4.6 tools row). Safe replay only when the
 * stored and the current declaration both say `replay: "safe"` and control is running: one commit
 * deletes the old checkpoint and emits `tool_start{recovery}`, then the tool runs again with the
 * persisted arguments, the same invocation id and the same memos. Otherwise the interruption
 * result, built from the latest checkpoint, stages without any hook. Client calls are not effects
 * of this process: they keep waiting, or under cancellation settle as cancelled (a posted answer
 * was placed before this, batch.ts).
 */
export async function recoverCall(pass: Pass, assistant: AssistantMessage, batch: ToolBatch, state: PendingCall, cancelled: boolean): Promise<void> {
  const call = toolCallAt(assistant, state.sourceIndex);
  const batchId = batch.assistantEntryId;
  if (state.client) {
    if (!cancelled) return;
    const posted = clientToolResult(pass.operationId, state.resultEntryId);
    const extraDeletes = pass.core.session.getValue(posted) ? [deleteValue(posted)] : [];
    await stageOutcome(pass, batchId, state.sourceIndex, call, {
      output: { content: [{ type: "text", text: "The tool call was cancelled before completion." }], isError: true },
      recovery: true,
      extraDeletes,
    });
    return;
  }
  const tool = batch.configuration.activeToolNames.includes(call.name) ? pass.core.tools.resolve(call.name) : undefined;
  const args = pass.core.session.getValue(operationToolArgs(pass.operationId, batch.turnId, state.sourceIndex))?.value ?? { ...call.arguments };
  if (!cancelled && state.replay === "safe" && tool?.kind === "executable" && tool.declaration.replay === "safe") {
    const replaying = await continueOperation(pass, (m, operation) => {
      const current = liveBatch(operation.state, batchId);
      if (current?.calls.find((candidate) => candidate.sourceIndex === state.sourceIndex)?.status !== "effect_pending") return { kind: "return" };
      const checkpoint = pendingToolOutput(pass.operationId, state.resultEntryId);
      return {
        kind: "commit",
        writes: m.getValue(checkpoint) ? [deleteValue(checkpoint)] : [],
        state: operation.state,
        events: () => [{ type: "tool_start", ...eventBase(pass, current, call), args, recovery: true }],
      };
    });
    if (replaying !== CONTINUE) return;
    await executeCall(pass, { batch, sourceIndex: state.sourceIndex, resultEntryId: state.resultEntryId, call, args }, tool, { recovery: true });
    return;
  }
  const output = interruptionOutput(pass.core.session, pass.operationId, state.resultEntryId);
  await stageOutcome(pass, batchId, state.sourceIndex, call, { output, recovery: true });
}
