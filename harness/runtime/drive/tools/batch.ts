import type { AssistantMessage } from "../../../../schema/messages.ts";
import type { ToolBatch, ToolCallState } from "../../types.ts";
import { CONTINUE, currentOperation, type Pass, type Step } from "../pass.ts";
import { assistantOf, liveBatch, stageOutcome, toolCallAt } from "./calls.ts";
import { clearCall, commitIntent } from "./clearance.ts";
import { parkForClients, settleClientCalls } from "./client.ts";
import { executeCall } from "./execution.ts";
import { placeSettledPrefix } from "./placement.ts";
import { recoverCall } from "./recovery.ts";
import type { StateAt } from "../../types.ts";

export { INTERRUPTED_TOOL_MESSAGE } from "./calls.ts";

/**
 * The `tools` leaf (reference §4.8, ARCHITECTURE D11). Each call goes planned → effect_pending →
 * outcome_ready → completed; results are placed in source order as a contiguous prefix. One
 * invocation of this procedure runs to a resting point: every call it started has staged, so a
 * call found `effect_pending` on entry was started by a lost process (or waits for a client).
 *
 * - Under cancellation (reconciliation, §4.5): planned calls settle as cancelled, restored
 *   effects as interrupted (never replayed), waiting client calls as cancelled; all are placed.
 * - Otherwise: restored effects recover (safe replay or interruption); planned calls clear and
 *   commit their intent in source order, then execute — one at a time end to end in sequential
 *   mode (the run's setting, or any called tool that asks for it), all at once in parallel mode,
 *   each staging as it completes; client calls wait for posted results.
 */
export async function runToolBatch(pass: Pass, state: StateAt<"tools">): Promise<Step> {
  const assistant = assistantOf(pass, state.batch);
  const batchId = state.batch.assistantEntryId;
  const cancelled = state.control.status === "cancel_requested";
  // A client's answer accepted before the marker is admitted work (§4.5: cancellation never erases
  // it): it is placed as the call's result, as a live pass places it, before the rest is cancelled.
  if (cancelled) await settleClientCalls(pass, assistant, batchId);
  for (const call of state.batch.calls) {
    if (call.status === "effect_pending") await recoverCall(pass, assistant, state.batch, call, cancelled);
  }
  if (cancelled) {
    for (const call of state.batch.calls) {
      if (call.status !== "planned") continue;
      const toolCall = toolCallAt(assistant, call.sourceIndex);
      const output = { content: [{ type: "text" as const, text: "The tool call was cancelled before completion." }], isError: true };
      await stageOutcome(pass, batchId, call.sourceIndex, toolCall, { output, start: { args: { ...toolCall.arguments } } });
    }
    return (await placeSettledPrefix(pass, assistant, batchId)) ?? CONTINUE;
  }
  const sequential = sequentialBatch(pass, state.batch, assistant);
  if (sequential) await runSequential(pass, assistant, batchId);
  else await runParallel(pass, assistant, batchId);
  return finishPass(pass, assistant, batchId, sequential);
}

/** Place what is settled; then either the batch is done, or only client calls remain (park), or the loop goes on. */
async function finishPass(pass: Pass, assistant: AssistantMessage, batchId: string, sequential: boolean): Promise<Step> {
  for (;;) {
    await settleClientCalls(pass, assistant, batchId);
    const placed = await placeSettledPrefix(pass, assistant, batchId);
    if (placed) return placed;
    if (!currentBatch(pass, batchId) || cancelRequested(pass)) return CONTINUE;
    const parked = await parkForClients(pass, batchId, { sequential });
    if (parked) return parked;
    // A result arrived between the check and the park, or calls are still planned (a sequential
    // batch behind a client call that just settled: the next invocation runs them): go round once
    // more, or continue with the state changed.
    if (!(await settleClientCalls(pass, assistant, batchId))) return CONTINUE;
  }
}

async function runSequential(pass: Pass, assistant: AssistantMessage, batchId: string): Promise<void> {
  for (;;) {
    const batch = currentBatch(pass, batchId);
    if (!batch || cancelRequested(pass)) return;
    // At most one call is in flight: a waiting client call holds the rest back.
    if (batch.calls.some((call) => call.status === "effect_pending")) {
      if (!(await settleClientCalls(pass, assistant, batchId))) return;
      await placeSettledPrefix(pass, assistant, batchId);
      continue;
    }
    const next = batch.calls.find((call) => call.status === "planned");
    if (!next) return;
    await runCall(pass, assistant, batch, next);
    await placeSettledPrefix(pass, assistant, batchId);
  }
}

async function runParallel(pass: Pass, assistant: AssistantMessage, batchId: string): Promise<void> {
  const running: Promise<void>[] = [];
  try {
    for (;;) {
      const batch = currentBatch(pass, batchId);
      const next = batch?.calls.find((call) => call.status === "planned");
      if (!batch || !next || cancelRequested(pass)) break;
      const started = await startCall(pass, assistant, batch, next, { sequential: false });
      if (started === "stopped") break;
      if (started) running.push(started.running.then(() => placeSettledPrefix(pass, assistant, batchId)).then(() => undefined));
    }
  } finally {
    // Clearance may throw (an abort refused admission): the effects already running still settle first.
    const settled = await Promise.allSettled(running);
    const failed = settled.find((result) => result.status === "rejected");
    if (failed?.status === "rejected") throw failed.reason;
  }
}

/** One call end to end (sequential mode). */
async function runCall(pass: Pass, assistant: AssistantMessage, batch: ToolBatch, state: ToolCallState): Promise<void> {
  const started = await startCall(pass, assistant, batch, state, { sequential: true });
  if (started && started !== "stopped") await started.running;
}

/**
 * Clears one planned call and commits its intent; answers the running execution (boxed, so that
 * awaiting this does not await the effect), undefined when
 * nothing runs here (a synthetic outcome staged, or a client call now waits), or "stopped" when
 * durable cancellation diverted the intent.
 */
async function startCall(pass: Pass, assistant: AssistantMessage, batch: ToolBatch, state: ToolCallState, mode: { sequential: boolean }): Promise<{ running: Promise<void> } | undefined | "stopped"> {
  const call = toolCallAt(assistant, state.sourceIndex);
  const clearance = await clearCall(pass, batch, call);
  if (clearance.kind === "synthetic") {
    await stageOutcome(pass, batch.assistantEntryId, state.sourceIndex, call, clearance.outcome);
    return undefined;
  }
  const { tool, args } = clearance;
  if (!(await commitIntent(pass, batch, state, call, tool, args, mode))) return "stopped";
  if (tool.kind === "client") return undefined;
  const current = currentBatch(pass, batch.assistantEntryId) ?? batch;
  return { running: executeCall(pass, { batch: current, sourceIndex: state.sourceIndex, resultEntryId: state.resultEntryId, call, args }, tool, { recovery: false }) };
}

/** Sequential when the run says so or any called (resolvable) tool declares it. */
function sequentialBatch(pass: Pass, batch: ToolBatch, assistant: AssistantMessage): boolean {
  if (currentOperation(pass).state.settings.toolExecution === "sequential") return true;
  return batch.calls.some((call) => pass.core.tools.resolve(toolCallAt(assistant, call.sourceIndex).name)?.declaration.executionMode === "sequential");
}

function currentBatch(pass: Pass, batchId: string): ToolBatch | undefined {
  const operation = pass.lane.state.operation;
  return operation?.meta.operationId === pass.operationId ? liveBatch(operation.state, batchId) : undefined;
}

function cancelRequested(pass: Pass): boolean {
  return pass.lane.state.operation?.state.control.status === "cancel_requested";
}
