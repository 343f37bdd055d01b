import type { JsonObject } from "../../../../schema/json.ts";
import type { ToolCall } from "../../../../schema/messages.ts";
import { argumentsProblem } from "../../../execution/tool-arguments.ts";
import type { ResolvedTool } from "../../../execution/tools.ts";
import { errorMessage } from "../../../execution/errors.ts";
import { operationToolArgs } from "../../../session/builtin-addresses.ts";
import { setValue } from "../../../session/writes.ts";
import type { ToolBatch, ToolCallState } from "../../types.ts";
import { CONTINUE, type Pass } from "../pass.ts";
import { scopeOf } from "../scope.ts";
import { errorOutput, eventBase, liveBatch, type StagedOutcome } from "./calls.ts";
import { continueOperation } from "../transition.ts";

export type Clearance = { kind: "synthetic"; outcome: StagedOutcome } | { kind: "cleared"; tool: ResolvedTool; args: JsonObject };

/**
 * Clearance of one planned call (reference §4.8 step 3): lookup in the registry filtered to the
 * batch's captured active tools, `prepareArguments`, JSON Schema validation, then the gated
 * `before_tool` (fail-closed; replaced arguments are validated again; the first block wins).
 * Anything refused becomes an immediate synthetic outcome; a truncated response runs nothing.
 */
export async function clearCall(pass: Pass, batch: ToolBatch, call: ToolCall): Promise<Clearance> {
  const raw: JsonObject = { ...call.arguments };
  const synthetic = (text: string, terminate?: boolean): Clearance => ({
    kind: "synthetic",
    outcome: { output: { ...errorOutput(text), ...(terminate && { terminate }) }, start: { args: raw } },
  });
  if (batch.truncated) return synthetic("The tool call was not executed because its arguments may be truncated (the response hit its output limit).");
  const tool = batch.configuration.activeToolNames.includes(call.name) ? pass.core.tools.resolve(call.name) : undefined;
  if (!tool) return synthetic(`Tool ${call.name} is not available.`);
  let args = raw;
  if (tool.kind === "executable" && tool.prepareArguments) {
    try {
      args = tool.prepareArguments(raw);
    } catch (error) {
      return synthetic(`The arguments of ${call.name} could not be prepared: ${errorMessage(error)}`);
    }
  }
  const invalid = argumentsProblem(tool.declaration.parameters, args);
  if (invalid) return synthetic(`Invalid arguments for ${call.name}: ${invalid}`);
  if (!pass.core.hooks.has("before_tool")) return { kind: "cleared", tool, args };
  const decision = await pass.gate.admit((signal) =>
    pass.core.hooks.runBeforeTool({ lane: pass.lane.name, runId: pass.operationId, toolCallId: call.id, toolName: call.name, args }, { signal }),
  );
  if (decision.block) return { kind: "synthetic", outcome: { output: { ...errorOutput(decision.block.reason), ...(decision.block.terminate && { terminate: true }) }, start: { args: decision.args } } };
  const replaced = argumentsProblem(tool.declaration.parameters, decision.args);
  if (replaced) return synthetic(`Invalid arguments for ${call.name} after before_tool: ${replaced}`);
  return { kind: "cleared", tool, args: decision.args };
}

/**
 * The intent commit (§4.8): the effective arguments stored, the call `effect_pending{replay}`
 * (a client call also records its deadline), then `tool_start`. A client call of a sequential
 * batch with calls still planned after it says so (`holdsBack`): they wait for its answer, so a
 * watcher knows nothing more runs until the client answers. False when durable cancellation
 * diverted it (the loop reconciles) or the call is no longer planned.
 */
export async function commitIntent(pass: Pass, batch: ToolBatch, state: ToolCallState, call: ToolCall, tool: ResolvedTool, args: JsonObject, mode: { sequential: boolean }): Promise<boolean> {
  let committed = false;
  const deadline = tool.kind === "client" && tool.timeoutMs !== undefined ? pass.core.clock() + tool.timeoutMs : undefined;
  const result = await continueOperation(pass, (_m, operation) => {
    const current = liveBatch(operation.state, batch.assistantEntryId);
    const index = current?.calls.findIndex((candidate) => candidate.sourceIndex === state.sourceIndex) ?? -1;
    if (!current || current.calls[index]?.status !== "planned") return { kind: "return" };
    const next: ToolCallState = {
      sourceIndex: state.sourceIndex,
      resultEntryId: state.resultEntryId,
      status: "effect_pending",
      replay: tool.declaration.replay,
      ...(tool.kind === "client" && { client: deadline === undefined ? {} : { deadline } }),
    };
    committed = true;
    const holdsBack = tool.kind === "client" && mode.sequential && current.calls.some((other) => other.status === "planned" && other.sourceIndex !== state.sourceIndex);
    return {
      kind: "commit",
      writes: [setValue(operationToolArgs(pass.operationId, current.turnId, state.sourceIndex), args)],
      state: { ...scopeOf(operation.state), at: "tools", batch: { ...current, calls: current.calls.with(index, next) } },
      events: () => [{ type: "tool_start", ...eventBase(pass, current, call), args, ...(tool.kind === "client" && { executor: "client" as const }), ...(holdsBack && { holdsBack: true as const }) }],
      ...(deadline !== undefined && { afterCommit: () => pass.core.wake.due(pass.lane.name, pass.operationId, deadline) }),
    };
  });
  return committed && result === CONTINUE;
}
