import type { InboxItem, LaneConfiguration, LaneQueuedItem } from "../../schema/lane.ts";
import { value } from "../session/addresses.ts";
import { branchTipInventoryPrefix, operationIdOfKey, operationMetaPrefix, pendingEntry } from "../session/builtin-addresses.ts";
import type { SessionMutator, SessionReader } from "../session/mutation.ts";
import { queuedItemOf, type LaneProjection } from "./lane-state.ts";
import { readLaneState, type ReadLaneState } from "./lane-state-form.ts";
import { readOpenOperation, readOperationRows, type ReadOpenOperation, type StoredOperationMeta } from "./operation-codec.ts";
import { longOperationForm } from "./operation-short-form.ts";
import type { DurableLaneState, OperationMeta, OperationState } from "./types.ts";

export class RestoreCorruption extends Error {
  override readonly name = "RestoreCorruption";
}

const laneConfigPrefix = value<LaneConfiguration>("pi.lane.config", "");
const laneStatePrefix = value<ReadLaneState>("pi.lane.state", "");
const openOperationMetas = operationMetaPrefix<Pick<StoredOperationMeta, "lane">>();

/**
 * The open operation of each lane: the one its lane state holds, or one an earlier build left
 * open in separate meta and state values (one meta per open operation, naming its lane; at most
 * one per lane, §3.2). Bounded by the number of lanes, never by history.
 */
export function openOperations(m: Pick<SessionReader, "scanValues">): Map<string, string> {
  const open = new Map<string, string>();
  const add = (lane: string, operationId: string): void => {
    const other = open.get(lane);
    if (other !== undefined) throw new RestoreCorruption(`Lane "${lane}" has two open operations, ${other} and ${operationId}`);
    open.set(lane, operationId);
  };
  for (const stored of m.scanValues(laneStatePrefix)) if (stored.value.o) add(stored.address.key, operationIdOfKey(stored.value.o.i));
  for (const [lane, operationId] of operationsInRows(m)) add(lane, operationId);
  return open;
}

/** The operations an earlier build left open in separate values, by lane. */
export function operationsInRows(m: Pick<SessionReader, "scanValues">): Map<string, string> {
  const open = new Map<string, string>();
  for (const stored of m.scanValues(openOperationMetas)) {
    const { lane } = longOperationForm(stored.value);
    const operationId = operationIdOfKey(stored.address.key);
    const other = open.get(lane);
    if (other !== undefined) throw new RestoreCorruption(`Lane "${lane}" has two open operations, ${other} and ${operationId}`);
    open.set(lane, operationId);
  }
  return open;
}

/**
 * The bounded attachment inventory (reference §2.4 `create`): every branch tip plus lane config and
 * state, and for complete lanes the current operation and queued payloads. Data-only branches stay
 * branches; any partial or contradictory mix is corruption.
 */
export function inventoryLanes(m: SessionMutator): Map<string, LaneProjection> {
  const tips = new Map(m.scanValues(branchTipInventoryPrefix()).map((tip) => [tip.address.key, tip.value]));
  const configs = new Map(m.scanValues(laneConfigPrefix).map((stored) => [stored.address.key, stored.value]));
  const states = new Map(m.scanValues(laneStatePrefix).map((stored) => [stored.address.key, readLaneState(stored.value)]));
  const inRows = operationsInRows(m);
  const lanes = new Map<string, LaneProjection>();
  for (const name of new Set([...configs.keys(), ...states.keys()])) {
    const configuration = configs.get(name);
    const state = states.get(name);
    if (!configuration || !state || !tips.has(name)) throw new RestoreCorruption(`Lane "${name}" is only partly stored`);
    lanes.set(name, restoreLane(m, name, tips.get(name) ?? null, configuration, state, inRows.get(name)));
  }
  for (const [lane, operationId] of inRows) {
    if (!lanes.has(lane)) throw new RestoreCorruption(`Operation ${operationId} belongs to lane "${lane}", which is not stored`);
  }
  return lanes;
}

/**
 * One complete lane's projection from exactly branchTip + laneConfig + laneState (+ its operation:
 * the one the lane state holds, or one an earlier build left in separate values).
 */
export function restoreLane(
  m: SessionMutator,
  name: string,
  tipId: string | null,
  configuration: LaneConfiguration,
  state: DurableLaneState & { open?: ReadOpenOperation },
  /** The lane's open operation in an earlier build's separate values (`openOperations`), if any. */
  operationInRows: string | undefined,
): LaneProjection {
  if (state.open && operationInRows !== undefined) {
    throw new RestoreCorruption(`Lane "${name}" has two open operations, ${operationIdOfKey(state.open.i)} and ${operationInRows}`);
  }
  const openOperationId = state.open ? operationIdOfKey(state.open.i) : operationInRows;
  // The earlier lane-state form names its current operation: it must agree with the meta rows.
  if (state.currentOperationId !== undefined && (state.currentOperationId ?? undefined) !== openOperationId) {
    throw new RestoreCorruption(`Lane "${name}" names operation ${state.currentOperationId ?? "none"}, but ${openOperationId ?? "none"} is open`);
  }
  const queued = new Map<string, LaneQueuedItem>();
  for (const item of state.inbox) {
    const payload = m.getValue(pendingEntry(item.entryId));
    if (!payload) throw new RestoreCorruption(`Queued item ${item.entryId} of lane "${name}" has no payload`);
    queued.set(item.entryId, queuedItemOf(item, payload.value));
  }
  return {
    tipId,
    configuration,
    inbox: state.inbox.map((item: InboxItem) => ({ ...item })),
    queued,
    lastOperationId: state.lastOperationId,
    pending: [...(state.pending ?? [])],
    operation: openOperationId === undefined ? null : restoreOperation(m, name, openOperationId, state.open),
  };
}

function restoreOperation(m: SessionMutator, lane: string, operationId: string, held: ReadOpenOperation | undefined): { meta: OperationMeta; state: OperationState } {
  const operation = held ? readOpenOperation(m, lane, held) : readOperationRows(m, operationId);
  if (!operation) throw new RestoreCorruption(`Operation ${operationId} of lane "${lane}" is only partly stored`);
  const { meta, state } = operation;
  if (meta.lane !== lane) throw new RestoreCorruption(`Operation ${operationId} belongs to lane "${meta.lane}", not "${lane}"`);
  if (!admissible(meta, state)) throw new RestoreCorruption(`Operation ${operationId} (${meta.intent.kind}) cannot be at ${state.at}`);
  return { meta, state };
}

/** The admissible leaves per intent (reference §3.3). */
export function admissible(meta: OperationMeta, state: OperationState): boolean {
  const summary = state.at.startsWith("summary.") && "task" in state ? state.task.boundary.kind : undefined;
  switch (meta.intent.kind) {
    case "run":
      return summary === undefined ? !state.at.startsWith("navigation.") : summary === "resume_checkpoint";
    case "compaction":
      return summary === "finish";
    case "navigation":
      return state.at === "navigation.ready_to_commit" || summary === "commit_navigation";
  }
}
