import type { OperationResultRecord } from "../../schema/lane.ts";
import { operationGeneration, operationMeta, operationResult, operationState } from "../session/builtin-addresses.ts";
import type { SessionReader } from "../session/mutation.ts";
import type { Write } from "../session/storage.ts";
import { resolveCapture, type CaptureStore } from "./captures.ts";
import { deleteValue, setValue } from "../session/writes.ts";
import type { Control, GenerationContext, OperationMeta, OperationState, RunSettings } from "./types.ts";

// The durable form of an open operation (reference §3.1–3.3; QUALITY P3). In memory every leaf
// carries the whole scope, as the reference describes; durably each value holds what only it
// knows, so a transition writes only what its leaf needs:
//   pi.op.meta/{op}        written once at acceptance: the intent and the key of the captured
//                          RunSettings (captures.ts; the operation id is the key, not repeated);
//   pi.op.generation/{op}  the GenerationContext, written once when a generation starts (entering
//                          `assistant.ready` with a new step), shared by its ready, effect-pending
//                          and retry-wait leaves; its lane configuration and request options are
//                          captures too;
//   pi.op.state/{op}       the leaf: `at` and its own fields; `control` only once cancelled,
//                          `latestAssistantEntryId` only once set;
//   pi.result/{op}         the immutable record, without the operation id its key already holds.
// Decoding tolerates the earlier whole-scope form (settings and generationContext inline).

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export interface StoredOperationMeta {
  lane: string;
  sourceTipId: string | null;
  startedAt: number;
  intent: OperationMeta["intent"];
  /** The capture key of the RunSettings (an object: the earlier inline form, read only). */
  settings: string | RunSettings;
}

/** A generation as stored: its own fields, and capture keys for what it shares with others. */
export interface StoredGeneration {
  stepId: string;
  triggerEntryId: string;
  overflowRecoveryUsed?: true;
  configuration: string;
  request: string;
}

/** The request options a generation captures (one capture: they change together, rarely). */
interface RequestOptions {
  streamOptions: GenerationContext["streamOptions"];
  retryPolicy: GenerationContext["retryPolicy"];
}

export type StoredOperationState = DistributiveOmit<OperationState, "control" | "settings" | "latestAssistantEntryId" | "generationContext"> & {
  control?: Control;
  latestAssistantEntryId?: string;
  /** Earlier whole-scope form, read only. */
  settings?: RunSettings;
  generationContext?: GenerationContext;
};

const RUNNING: Control = { status: "running" };

type Reader = Pick<SessionReader, "getValue">;

export function metaWrites(m: Reader, captures: CaptureStore, meta: OperationMeta, settings: RunSettings): Write[] {
  const { operationId, ...rest } = meta;
  const captured = captures.capture(m, settings);
  return [...captured.writes, setValue(operationMeta<StoredOperationMeta>(operationId), { ...rest, settings: captured.key })];
}

/**
 * The writes that move an operation's durable state from `previous` to `next`: the leaf, and the
 * generation when `next` starts one (a new step) that `previous` did not already store.
 */
export function stateWrites(m: Reader, captures: CaptureStore, operationId: string, next: OperationState, previous: OperationState | undefined): Write[] {
  const { control, settings: _captured, latestAssistantEntryId, ...leaf } = next;
  const generation = "generationContext" in leaf ? leaf.generationContext : undefined;
  const stored: StoredOperationState = withoutGeneration(leaf);
  if (control.status !== "running") stored.control = control;
  if (latestAssistantEntryId !== null) stored.latestAssistantEntryId = latestAssistantEntryId;
  const writes: Write[] = [setValue(operationState<StoredOperationState>(operationId), stored)];
  const alreadyStored = previous && "generationContext" in previous ? previous.generationContext.stepId : undefined;
  if (generation && generation.stepId !== alreadyStored) writes.push(...generationWrites(m, captures, operationId, generation));
  return writes;
}

function generationWrites(m: Reader, captures: CaptureStore, operationId: string, generation: GenerationContext): Write[] {
  const configuration = captures.capture(m, generation.configuration);
  const options: RequestOptions = { streamOptions: generation.streamOptions, retryPolicy: generation.retryPolicy };
  const request = captures.capture(m, options);
  const stored: StoredGeneration = {
    stepId: generation.stepId,
    triggerEntryId: generation.triggerEntryId,
    ...(generation.overflowRecoveryUsed && { overflowRecoveryUsed: true }),
    configuration: configuration.key,
    request: request.key,
  };
  return [...configuration.writes, ...request.writes, setValue(operationGeneration<StoredGeneration>(operationId), stored)];
}

/** Everything the terminal transaction deletes of the operation's own values. */
export function operationDeletes(operationId: string): Write[] {
  return [deleteValue(operationMeta(operationId)), deleteValue(operationState(operationId)), deleteValue(operationGeneration(operationId))];
}

/** Reads an open operation back; undefined when a part is missing (the caller decides: corruption). */
export function readOperation(m: Reader, operationId: string): { meta: OperationMeta; state: OperationState } | undefined {
  const storedMeta = m.getValue(operationMeta<StoredOperationMeta & { operationId?: string }>(operationId))?.value;
  const stored = m.getValue(operationState<StoredOperationState>(operationId))?.value;
  if (!storedMeta || !stored) return undefined;
  const { settings: capturedSettings, operationId: _legacyId, ...metaRest } = storedMeta;
  const meta: OperationMeta = { operationId, ...metaRest };
  const { control, latestAssistantEntryId, settings: legacySettings, generationContext: legacyGeneration, ...leaf } = stored;
  const settings = legacySettings ?? (typeof capturedSettings === "string" ? resolveCapture<RunSettings>(m, capturedSettings) : capturedSettings);
  if (!settings) return undefined;
  const scope = { control: control ?? RUNNING, settings, latestAssistantEntryId: latestAssistantEntryId ?? null };
  if (!needsGeneration(leaf)) return { meta, state: { ...scope, ...leaf } };
  const generationContext = legacyGeneration ?? readGeneration(m, operationId);
  if (!generationContext) return undefined;
  return { meta, state: { ...scope, ...leaf, generationContext } };
}

function readGeneration(m: Reader, operationId: string): GenerationContext | undefined {
  const stored = m.getValue(operationGeneration<StoredGeneration>(operationId))?.value;
  if (!stored) return undefined;
  const configuration = resolveCapture<GenerationContext["configuration"]>(m, stored.configuration);
  const request = resolveCapture<RequestOptions>(m, stored.request);
  if (!configuration || !request) return undefined;
  return {
    stepId: stored.stepId,
    triggerEntryId: stored.triggerEntryId,
    configuration,
    streamOptions: request.streamOptions,
    retryPolicy: request.retryPolicy,
    overflowRecoveryUsed: stored.overflowRecoveryUsed === true,
  };
}

type LeanLeaf = DistributiveOmit<OperationState, "control" | "settings" | "latestAssistantEntryId" | "generationContext">;
type GenerationLeaf = Extract<LeanLeaf, { at: "assistant.ready" | "assistant.effect_pending" | "assistant.retry_wait" }>;

function needsGeneration(leaf: LeanLeaf): leaf is GenerationLeaf {
  return leaf.at === "assistant.ready" || leaf.at === "assistant.effect_pending" || leaf.at === "assistant.retry_wait";
}

function withoutGeneration(leaf: DistributiveOmit<OperationState, "control" | "settings" | "latestAssistantEntryId">): StoredOperationState {
  if (!("generationContext" in leaf)) return leaf;
  const { generationContext: _generation, ...rest } = leaf;
  return rest;
}

type StoredResult = Omit<OperationResultRecord, "operationId"> & { operationId?: string };

/** The immutable record of a settled operation (reference §3.8), written once by the terminal. */
export function resultWrite(record: OperationResultRecord): Write {
  const { operationId, ...rest } = record;
  return setValue(operationResult<StoredResult>(operationId), rest);
}

/** The record of a settled operation, however old; undefined when it never settled. */
export function readResult(m: Pick<SessionReader, "getValue">, operationId: string): OperationResultRecord | undefined {
  const stored = m.getValue(operationResult<StoredResult>(operationId))?.value;
  if (!stored) return undefined;
  const { operationId: _legacyId, ...rest } = stored;
  return { operationId, ...rest };
}
