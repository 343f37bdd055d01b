import type { JsonObject } from "../../../../schema/json.ts";
import type { AssistantMessage } from "../../../../schema/messages.ts";
import type { ToolOutput } from "../../../execution/tools.ts";
import { clientToolResult, operationToolArgs } from "../../../session/builtin-addresses.ts";
import { deleteValue } from "../../../session/writes.ts";
import type { Step } from "../pass.ts";
import { type Pass } from "../pass.ts";
import { errorOutput, liveBatch, stageOutcome, toolCallAt } from "./calls.ts";
import { toolContent } from "./checkpoint.ts";
import { afterTool } from "./execution.ts";

// Client tools (ARCHITECTURE D11): the run waits in the tools leaf until the tenant's client posts
// the call's result (stored on the line by the tool-results route, which then asks for a pass).
// A restart keeps waiting — nothing ran here that could have been interrupted — and an abort
// settles the call as cancelled. A call past its deadline ends with an error result.

/** Stages every waiting client call that has a posted result or ran out of time; true if any staged. */
export async function settleClientCalls(pass: Pass, assistant: AssistantMessage, batchId: string): Promise<boolean> {
  const operation = pass.lane.state.operation;
  const batch = operation ? liveBatch(operation.state, batchId) : undefined;
  if (!batch) return false;
  let staged = false;
  for (const state of batch.calls) {
    if (state.status !== "effect_pending" || !state.client) continue;
    const call = toolCallAt(assistant, state.sourceIndex);
    const address = clientToolResult(pass.operationId, state.resultEntryId);
    const posted = pass.core.session.getValue(address)?.value;
    const expired = state.client.deadline !== undefined && pass.core.clock() >= state.client.deadline;
    if (!posted && !expired) continue;
    const args = pass.core.session.getValue(operationToolArgs(pass.operationId, batch.turnId, state.sourceIndex))?.value ?? { ...call.arguments };
    const output = posted ? postedOutput(posted) : errorOutput(`No result was posted for ${call.name} in time.`);
    const patched = posted ? await afterTool(pass, { call, args }, output) : output;
    if (await stageOutcome(pass, batchId, state.sourceIndex, call, { output: patched, extraDeletes: posted ? [deleteValue(address)] : [] })) staged = true;
  }
  return staged;
}

/**
 * Parks the run when nothing left in the batch can progress in this process: every call in flight
 * waits for a client (settled calls may still wait for their place), and in sequential mode the
 * planned calls behind them are held back until those answer (reference §4.8: one call end to end
 * at a time). Checked on the line, where a result posted meanwhile is seen (then the caller
 * settles it instead). Without a deadline nothing is due until a result arrives; with one, the
 * earliest deadline is.
 */
export async function parkForClients(pass: Pass, batchId: string, mode: { sequential: boolean }): Promise<Step | undefined> {
  const parked = await pass.core.session.mutate((m) => {
    const operation = pass.lane.state.operation;
    const batch = operation?.meta.operationId === pass.operationId ? liveBatch(operation.state, batchId) : undefined;
    if (!batch || operation?.state.control.status !== "running") return false;
    // Outcome-ready calls are settled: they only wait to be placed behind an unanswered client
    // call (results go in source order), so they do not keep the run from parking.
    const inFlight = batch.calls.filter((call) => call.status === "effect_pending");
    const planned = batch.calls.some((call) => call.status === "planned");
    const waiting = inFlight.length > 0 && inFlight.every((call) => call.client && !m.getValue(clientToolResult(pass.operationId, call.resultEntryId)));
    // In parallel mode every planned call has started by now; one that has not is work to do here.
    if (!waiting || (planned && !mode.sequential)) return false;
    const deadlines = inFlight.flatMap((call) => (call.status === "effect_pending" && call.client?.deadline !== undefined ? [call.client.deadline] : []));
    if (deadlines.length > 0) pass.core.wake.due(pass.lane.name, pass.operationId, Math.min(...deadlines));
    else pass.core.wake.parked?.(pass.lane.name, pass.operationId);
    return true;
  });
  return parked ? { kind: "waiting", outcome: { kind: "waiting", operationId: pass.operationId, reason: "client_tool" } } : undefined;
}

/** What the client posted, as a tool outcome (validated by the route before it was stored). */
function postedOutput(posted: JsonObject): ToolOutput {
  return { content: toolContent(posted.content), isError: posted.isError === true, ...(posted.details !== undefined && { details: posted.details }) };
}
