import type { HarnessEvent } from "../../../../schema/lane.ts";
import type { JsonObject, JsonValue } from "../../../../schema/json.ts";
import type { ToolCall } from "../../../../schema/messages.ts";
import { AbortRequested } from "../../../execution/effect-gate.ts";
import { errorMessage } from "../../../execution/errors.ts";
import { validMemoName, type ExecutableTool, type ToolInvocation, type ToolOutput, type ToolProgress } from "../../../execution/tools.ts";
import { operationToolMemo, pendingToolOutput } from "../../../session/builtin-addresses.ts";
import type { SessionMutator } from "../../../session/mutation.ts";
import { deleteValue, setValue } from "../../../session/writes.ts";
import type { OperationState, ToolBatch } from "../../types.ts";
import type { Pass } from "../pass.ts";
import { ProgressWriter } from "../progress.ts";
import { errorOutput, eventBase, liveBatch, resultView, stageOutcome } from "./calls.ts";
import { checkpointValue } from "./checkpoint.ts";

/** One admitted call: where it stands in its batch and what it runs with. */
export interface InFlightCall {
  batch: ToolBatch;
  sourceIndex: number;
  resultEntryId: string;
  call: ToolCall;
  args: JsonObject;
}

/** Whether the call still owns its effect (`effect_pending`): the fence of its memos and checkpoints. */
export function stillInFlight(state: OperationState, batchId: string, sourceIndex: number): boolean {
  const batch = liveBatch(state, batchId);
  return batch?.calls.find((call) => call.sourceIndex === sourceIndex)?.status === "effect_pending";
}

/**
 * Executes one call whose intent committed (reference §4.8): `tool.execute` admitted through the
 * gate; live updates become `tool_update`, checkpoint updates also fenced progress writes; once
 * the promise settles, updates and memos close, the last delivery and checkpoint are awaited,
 * `after_tool` patches the outcome (skipped when an abort wins first), and the outcome stages.
 * A throw is the tool's error result. A refused admission (abort first) propagates: the call
 * stays `effect_pending` and reconciliation reports it interrupted.
 */
export async function executeCall(pass: Pass, flight: InFlightCall, tool: ExecutableTool, options: { recovery: boolean }): Promise<void> {
  const { core } = pass;
  const batchId = flight.batch.assistantEntryId;
  const invocationId = flight.resultEntryId;
  const progress = new ProgressWriter(pass, (state) => stillInFlight(state, batchId, flight.sourceIndex));
  const base = eventBase(pass, flight.batch, flight.call);
  let accepting = true;
  let delivery: Promise<void> = Promise.resolve();
  const onUpdate = (partial: ToolProgress, update?: { checkpoint?: true }): void => {
    if (!accepting) return;
    const event: HarnessEvent = { type: "tool_update", ...base, partialResult: resultView(partial) };
    pass.lane.setToolPartial(flight.call.id, event.partialResult);
    delivery = core.events.emitBatch([event]);
    if (update?.checkpoint) progress.write([setValue(pendingToolOutput(pass.operationId, invocationId), checkpointValue(partial))]);
  };
  const memos = memoCapability(pass, flight, batchId);
  let output: ToolOutput;
  try {
    output = await pass.gate.admit((signal) => tool.execute(flight.args, { toolCallId: flight.call.id, signal, onUpdate, invocation: memos.invocation }));
  } catch (error) {
    if (error instanceof AbortRequested || pass.gate.closeSignal.aborted) throw error;
    output = errorOutput(errorMessage(error));
  } finally {
    accepting = false;
    memos.expire();
  }
  await delivery.catch(() => undefined);
  await progress.flushed();
  output = await afterTool(pass, flight, output);
  pass.lane.setToolPartial(flight.call.id, undefined);
  await stageOutcome(pass, batchId, flight.sourceIndex, flight.call, { output, recovery: options.recovery });
}

/** The gated `after_tool` patch; skipped when an abort already closed admission. */
export async function afterTool(pass: Pass, flight: Pick<InFlightCall, "call" | "args">, output: ToolOutput): Promise<ToolOutput> {
  const { hooks } = pass.core;
  if (!hooks.has("after_tool")) return output;
  try {
    const patched = await pass.gate.admit((signal) =>
      hooks.runAfterTool(
        {
          lane: pass.lane.name,
          runId: pass.operationId,
          toolCallId: flight.call.id,
          toolName: flight.call.name,
          args: flight.args,
          content: output.content,
          isError: output.isError === true,
          ...(output.details !== undefined && { details: output.details }),
          ...(output.usage !== undefined && { usage: output.usage }),
        },
        { signal },
      ),
    );
    return { ...output, ...patched };
  } catch (error) {
    if (error instanceof AbortRequested) return output;
    throw error;
  }
}

/**
 * The invocation capability (§4.8 memos): each memo operation is enqueued on the mutation line at
 * once, checks there that the call is still in flight, and rejects after the call settled.
 */
function memoCapability(pass: Pass, flight: InFlightCall, batchId: string): { invocation: ToolInvocation; expire(): void } {
  let expired = false;
  const onLine = (name: string, work: (m: SessionMutator) => JsonValue | undefined): Promise<JsonValue | undefined> => {
    if (expired) return Promise.reject(new Error("The tool invocation has settled; its memos are closed"));
    if (!validMemoName(name)) return Promise.reject(new Error(`Invalid memo name ${JSON.stringify(name)} (non-empty, at most 128 characters, no ":")`));
    return pass.core.session.mutate((m) => {
      pass.core.assertUnfaulted();
      const operation = pass.lane.state.operation;
      if (operation?.meta.operationId !== pass.operationId || !stillInFlight(operation.state, batchId, flight.sourceIndex)) {
        throw new Error("The tool call is no longer in flight");
      }
      return work(m);
    });
  };
  const address = (name: string) => operationToolMemo(pass.operationId, flight.resultEntryId, name);
  const agent = pass.lane.state.operation?.state.settings.agent;
  return {
    invocation: {
      invocationId: flight.resultEntryId,
      operationId: pass.operationId,
      lane: pass.lane.name,
      ...(agent && { agent }),
      turnId: flight.batch.turnId,
      getMemo: (name) => onLine(name, (m) => m.getValue(address(name))?.value),
      setMemo: async (name, value) => {
        await onLine(name, (m) => {
          m.commit([value === undefined ? deleteValue(address(name)) : setValue(address(name), value)]);
          return undefined;
        });
      },
    },
    expire: () => {
      expired = true;
    },
  };
}
