import type { Entry } from "../../../../schema/entries.ts";
import type { HarnessEvent, LaneConfiguration } from "../../../../schema/lane.ts";
import type { AssistantMessage, ToolResultMessage } from "../../../../schema/messages.ts";
import { zeroUsage } from "../../../session/usage.ts";
import { branchTip, laneConfig, operationToolArgsPrefix, pendingEntry } from "../../../session/builtin-addresses.ts";
import type { Write } from "../../../session/storage.ts";
import { deleteValue, insertEntry, insertUsage, setValue } from "../../../session/writes.ts";
import { placementEvents } from "../../acceptance.ts";
import type { Committed } from "../../lane-command.ts";
import type { ToolBatch, ToolCallState } from "../../types.ts";
import { CONTINUE, type Pass, type Step } from "../pass.ts";
import { scopeOf } from "../scope.ts";
import { liveBatch } from "./calls.ts";
import { settleOperation, type LanePatch } from "../transition.ts";

/**
 * Materialization (reference §4.8): one transaction places the contiguous `outcome_ready` prefix
 * from the first non-completed call — each result entry chained from the previous, its pending
 * payload deleted, its tool-reported usage row with it, the tip moved, the calls `completed`.
 * Names a result adds become active on the lane from here (config_update). Placing the last call
 * ends the turn: `checkpoint{may_finish}` when every result asked to terminate, else
 * `checkpoint{need_assistant}`, deleting the step's tool args. Answers `continue` when it moved
 * the operation out of the batch, undefined otherwise.
 */
export async function placeSettledPrefix(pass: Pass, assistant: AssistantMessage, batchId: string): Promise<Step | undefined> {
  let finished = false;
  await settleOperation(pass, (m, operation, lane) => {
    const batch = liveBatch(operation.state, batchId);
    if (!batch) return { kind: "return" };
    const writes: Write[] = [];
    const calls: ToolCallState[] = [...batch.calls];
    let tipId = lane.tipId;
    let configuration: LaneConfiguration = lane.configuration;
    let index = calls.findIndex((call) => call.status !== "completed");
    // Only the contiguous outcome_ready prefix is placed: completed calls always form a prefix.
    while (index >= 0 && index < calls.length) {
      const call = calls[index];
      if (!call || call.status !== "outcome_ready") break;
      const pending = m.getValue(pendingEntry(call.resultEntryId));
      if (!pending || pending.value.type !== "message") throw new Error(`Invariant: staged outcome ${call.resultEntryId} is missing`);
      const message = pending.value.payload;
      writes.push(insertEntry({ id: call.resultEntryId, parentId: tipId, type: "message", message }));
      if (message.role === "toolResult" && message.usage) {
        writes.push(insertUsage({ id: pass.core.ids.next(), usage: message.usage, entryId: call.resultEntryId, adjustment: false }));
      }
      if (message.role === "toolResult" && message.addedToolNames) configuration = withTools(configuration, message.addedToolNames);
      writes.push(deleteValue(pendingEntry(call.resultEntryId)));
      tipId = call.resultEntryId;
      calls[index] = { sourceIndex: call.sourceIndex, resultEntryId: call.resultEntryId, status: "completed", terminate: call.terminate };
      index++;
    }
    if (writes.length === 0) return { kind: "return" };
    const lastId = tipId ?? batch.assistantEntryId;
    writes.push(setValue(branchTip(pass.lane.name), lastId));
    const previousTools = lane.configuration.activeToolNames;
    const toolsChanged = configuration.activeToolNames.length !== previousTools.length;
    if (toolsChanged) writes.push(setValue(laneConfig<LaneConfiguration>(pass.lane.name), configuration));
    const patch: LanePatch = { tipId: lastId, ...(toolsChanged && { configuration }) };
    const done = calls.every((call) => call.status === "completed");
    const events = (committed: Committed | undefined): HarnessEvent[] => [
      ...placementEvents(pass.lane.name, pass.operationId, committed?.entries ?? []),
      ...(committed?.usage ?? []).map((row): HarnessEvent => ({ type: "usage", lane: pass.lane.name, row, totals: committed?.commit.stats.usage ?? zeroUsage() })),
      ...(toolsChanged ? [{ type: "config_update" as const, lane: pass.lane.name, property: "activeTools" as const, value: configuration.activeToolNames, previous: previousTools }] : []),
      ...(done ? [turnEnd(pass, batch, assistant, resultsOf(m.getEntries(calls.map((call) => call.resultEntryId)), calls))] : []),
    ];
    if (!done) return { kind: "commit", writes, state: { ...scopeOf(operation.state), at: "tools", batch: { ...batch, calls } }, patch, events };
    finished = true;
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
      patch,
      events,
    };
  });
  return finished ? CONTINUE : undefined;
}

function withTools(configuration: LaneConfiguration, added: readonly string[]): LaneConfiguration {
  const names = [...configuration.activeToolNames];
  for (const name of added) if (!names.includes(name)) names.push(name);
  return names.length === configuration.activeToolNames.length ? configuration : { ...configuration, activeToolNames: names };
}

/** Every result of the batch, in source order, for `turn_end`. */
function resultsOf(entries: ReadonlyMap<string, Entry>, calls: readonly ToolCallState[]): ToolResultMessage[] {
  return calls.flatMap((call) => {
    const entry = entries.get(call.resultEntryId);
    return entry?.type === "message" && entry.message.role === "toolResult" ? [entry.message] : [];
  });
}

function turnEnd(pass: Pass, batch: ToolBatch, assistant: AssistantMessage, toolResults: ToolResultMessage[]): HarnessEvent {
  return { type: "turn_end", lane: pass.lane.name, runId: pass.operationId, turnId: batch.turnId, message: assistant, toolResults };
}
