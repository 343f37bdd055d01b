import type { AgentMessage } from "../../schema/messages.ts";
import type { JsonObject, JsonValue } from "../../schema/json.ts";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { ModelIdentity, ThinkingLevel } from "../../schema/lane.ts";
import { list, value, type Value, type ValueList } from "./addresses.ts";
import { isPackedUuid, packUuid, unpackUuid } from "./ids.ts";

// The complete built-in address table of reference §1.4. Operation-state shapes are owned by the
// runtime; at this layer they are opaque JSON so the store never depends on the engine.

export type PendingEntry =
  | { type: "message"; payload: AgentMessage }
  | { type: "custom"; customType: string; payload?: JsonValue };

const opKey = (...parts: (string | number)[]): string => parts.join(":");

export const branchTip = (name: string): Value<string | null> => value("pi.branch.tip", name);
export const laneConfig = <T = JsonObject>(name: string): Value<T> => value<T>("pi.lane.config", name);
export const laneState = <T = JsonObject>(name: string): Value<T> => value<T>("pi.lane.state", name);
export const operationResult = <T = JsonObject>(opId: string): Value<T> => value<T>("pi.result", opId);
/**
 * The key of an open operation's meta and state (QUALITY P3: both are written and deleted by every
 * turn): its id packed when it is a UUID (ids.ts packUuid), any other id as it is. Earlier builds
 * keyed them by the id's text (`legacyOperationMeta`/`legacyOperationState`, read and deleted only).
 */
export const operationKey = (opId: string): string => packUuid(opId) ?? opId;
/** The operation id an open operation's meta or state key stands for (either form). */
export const operationIdOfKey = (key: string): string => (isPackedUuid(key) ? unpackUuid(key) : key);
export const operationMeta = <T = JsonObject>(opId: string): Value<T> => value<T>("pi.op.meta", operationKey(opId));
export const operationState = <T = JsonObject>(opId: string): Value<T> => value<T>("pi.op.state", operationKey(opId));
export const legacyOperationMeta = <T = JsonObject>(opId: string): Value<T> => value<T>("pi.op.meta", opId);
/** Every open operation's meta, whichever form its key has (a scan prefix). */
export const operationMetaPrefix = <T = JsonObject>(): Value<T> => value<T>("pi.op.meta", "");
export const legacyOperationState = <T = JsonObject>(opId: string): Value<T> => value<T>("pi.op.state", opId);
/** The operation's current GenerationContext, written once per generation (operation-codec.ts). */
export const operationGeneration = <T = JsonObject>(opId: string): Value<T> => value<T>("pi.op.generation", opId);
export const operationToolArgs = (opId: string, stepId: string, sourceIndex: number): Value<JsonObject> =>
  value("pi.op.tool_args", opKey(opId, stepId, sourceIndex));
export const operationToolMemo = (opId: string, invocationId: string, name: string): Value<JsonValue> =>
  value("pi.op.tool_memo", opKey(opId, invocationId, name));
/** A client tool's posted result, waiting for the run to take it (deleted when the call stages). */
export const clientToolResult = (opId: string, invocationId: string): Value<JsonObject> =>
  value("pi.op.tool_result", opKey(opId, invocationId));
export const operationPreparation = <T = JsonObject>(opId: string, taskId: string): Value<T> =>
  value<T>("pi.op.preparation", opKey(opId, taskId));
export const pendingEntry = (entryId: string): Value<PendingEntry> => value("pi.pending.entry", entryId);
/** A pending run's request, from its acceptance until it starts or is cancelled (pending-runs.ts). */
export const pendingRun = <T = JsonObject>(opId: string): Value<T> => value<T>("pi.pending.run", operationKey(opId));
export const pendingToolOutput = (opId: string, invocationId: string): Value<JsonObject> =>
  value("pi.pending.tool_output", opKey(opId, invocationId));
export const pendingAssistantFrames = <T = JsonObject>(opId: string, responseEntryId: string): ValueList<T> =>
  list<T>("pi.pending.assistant_frame", opKey(opId, responseEntryId));
export const sessionName: Value<string> = value("pi.session.name", "");
/** The session's metadata (string keys to string values, bounded by the API): who and what the session belongs to. */
export const sessionMetadata: Value<Record<string, string>> = value("pi.session.metadata", "");
/**
 * The agent version the session is bound to (spec/API.md "Agents"), and the lane configuration
 * its lanes take from it. Every operation captures `{ id, version }` at acceptance (RunSettings).
 */
export const sessionAgent: Value<AgentBinding> = value("pi.session.agent", "");
export interface AgentBinding extends AgentVersionRef {
  /** What a lane created from the version (and every lane when the session moves to it) takes. */
  lane: { model?: ModelIdentity; thinkingLevel?: ThinkingLevel; activeTools?: string[] };
}
export const entryLabel = (entryId: string): Value<string> => value("pi.entry.label", entryId);

// The scan-prefix constructors: only for `scanValues`, where the key is a prefix.
export const branchTipInventoryPrefix = (): Value<string | null> => value("pi.branch.tip", "");
export const laneStatePrefix = <T = JsonObject>(): Value<T> => value<T>("pi.lane.state", "");
export const operationToolArgsPrefix = (opId: string, stepId?: string): Value<JsonObject> =>
  value("pi.op.tool_args", stepId === undefined ? `${opId}:` : `${opId}:${stepId}:`);
export const operationToolMemoPrefix = (opId: string, invocationId?: string): Value<JsonValue> =>
  value("pi.op.tool_memo", invocationId === undefined ? `${opId}:` : `${opId}:${invocationId}:`);
export const clientToolResultPrefix = (opId: string): Value<JsonObject> => value("pi.op.tool_result", `${opId}:`);
export const operationPreparationPrefix = (opId: string): Value<JsonObject> => value("pi.op.preparation", `${opId}:`);
export const pendingToolOutputPrefix = (opId: string): Value<JsonObject> => value("pi.pending.tool_output", `${opId}:`);

