import type { OperationError, OperationKind, OperationResultRecord, OperationStatus } from "../../schema/lane.ts";
import {
  laneStatePrefix,
  legacyOperationMeta,
  legacyOperationState,
  operationGeneration,
  operationIdOfKey,
  operationKey,
  operationMeta,
  operationResult,
  operationState,
} from "../session/builtin-addresses.ts";
import { isUuidV7, packUuid, unpackUuid, uuidv7Timestamp } from "../session/ids.ts";
import type { SessionReader } from "../session/mutation.ts";
import type { Write } from "../session/storage.ts";
import { resolveCapture, type CaptureStore } from "./captures.ts";
import { deleteValue, setValue } from "../session/writes.ts";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { Control, GenerationContext, OperationMeta, OperationState, RunSettings } from "./types.ts";
import { longOperationForm, shortOperationForm, type ShortForm } from "./operation-short-form.ts";

// The durable form of an open operation (reference §3.1–3.3; QUALITY P3, P12). In memory every
// leaf carries the whole scope, as the reference describes; durably the open operation lives in
// its lane's state value (`pi.lane.state/{lane}`, lane-state-codec.ts), which a settling commit
// rewrites anyway: acceptance, each transition and the settlement each rewrite that one row, where
// separate meta and state values cost an insert and a delete each per turn (rows written are most
// of a turn's bill). Stored there:
//   meta     the intent and the key of the captured RunSettings (captures.ts); the operation id
//            and the lane are the value's own (`i`, its key);
//   state    the leaf: `at` and its own fields; `control` only once cancelled,
//            `latestAssistantEntryId` only once set; a generation leaf (ready, effect-pending,
//            retry-wait) holds its GenerationContext inline, with the lane configuration and
//            request options as captures. No state means `starting` under running control;
//   pi.result/{op}  the immutable record, compact: without the operation id its key already
//            holds, defaults and null tips left out, the end as a duration.
// Earlier builds stored meta and state as values of their own (`pi.op.meta/{op}`,
// `pi.op.state/{op}`, keyed by the packed id or the id's text): an operation they left open is
// still read from there and its rows are deleted by its settlement. Decoding tolerates the
// earlier forms too: whole-scope state (settings and generationContext inline), the separate
// `pi.op.generation/{op}` row, and a `starting` row.

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export interface StoredOperationMeta {
  lane: string;
  sourceTipId: string | null;
  startedAt: number;
  intent: OperationMeta["intent"];
  /** The capture key of the RunSettings (an object: the earlier inline form, read only). */
  settings: string | RunSettings;
}

/** The open operation as its lane's state value holds it (short forms, operation-short-form.ts). */
export interface StoredOpenOperation {
  /** The operation id, packed when it is a UUID (builtin-addresses operationKey). */
  i: string;
  /** The meta without its lane. */
  m: ShortForm;
  /** The leaf; absent while `starting` under running control. */
  s?: ShortForm;
}

/**
 * The same as a reader types it: the short form reads back as the long one through
 * `longOperationForm` (which passes the long names of earlier rows through as they are).
 */
export interface ReadOpenOperation {
  i: string;
  m: StoredOpenMeta;
  s?: StoredOperationState;
}

/**
 * The meta as a lane state holds it: no lane (the value's key), a run's intent without its kind
 * (the default), and the start as milliseconds after the time its UUIDv7 id carries (a few
 * digits instead of thirteen; every accepted id is one, acceptance.ts).
 */
type StoredOpenMeta = Omit<StoredOperationMeta, "lane" | "startedAt" | "intent"> & {
  startedAt?: number;
  startedAfterId?: number;
  intent: OperationMeta["intent"] | { promptEntryIds: string[] };
};

/** A generation as stored: its own fields, and the key of what it shares with others. */
export interface StoredGeneration {
  stepId: string;
  triggerEntryId: string;
  overflowRecoveryUsed?: true;
  /** The key of its GenerationCapture. */
  capture?: string;
  /** Earlier form: separate capture keys, read only. */
  configuration?: string;
  request?: string;
}

/** The model limits an effect-pending request was admitted under. */
interface Limits {
  intendedOutputLimit: number;
  contextWindow: number;
}

/**
 * What a generation shares with others, captured once per distinct content: the lane
 * configuration and request options, and for an effect the model limits (they change together,
 * rarely). The earlier form captured configuration and options separately, without limits.
 */
interface GenerationCapture extends Partial<Limits> {
  configuration: GenerationContext["configuration"];
  streamOptions: GenerationContext["streamOptions"];
  retryPolicy: GenerationContext["retryPolicy"];
}

type LeanLeaf = DistributiveOmit<OperationState, "control" | "settings" | "latestAssistantEntryId" | "generationContext">;

export type StoredOperationState = DistributiveOmit<LeanLeaf, keyof Limits> &
  Partial<Limits> & {
    control?: Control;
    latestAssistantEntryId?: string;
    /** A generation leaf's GenerationContext. */
    generation?: StoredGeneration;
    /** Earlier whole-scope form, read only. */
    settings?: RunSettings;
    generationContext?: GenerationContext;
  };

const RUNNING: Control = { status: "running" };

type Reader = Pick<SessionReader, "getValue">;

/**
 * A meta's stored form, kept per meta object once its captures are stored (an operation's meta
 * never changes; every transition stores it again with its leaf, and need not hash its settings
 * again). Only a form whose encoding wrote nothing is kept: a capture write belongs to a commit
 * that may still fail.
 */
const storedMetas = new WeakMap<OperationMeta, ShortForm>();

/**
 * Operations read from an earlier build's separate meta and state values: the first commit that
 * stores one in its lane state (or its settlement) deletes those rows, so they never stand beside
 * it (an operation opened since has none, so no lookup is spent on it).
 */
const readFromRows = new WeakSet<OperationMeta>();

/** The open operation as its lane's state stores it, and the capture writes it needs first. */
export function storedOpenOperation(m: Reader, captures: CaptureStore, operation: { meta: OperationMeta; state: OperationState }): { stored: StoredOpenOperation; writes: Write[] } {
  const meta = storedMeta(m, captures, operation.meta, operation.state.settings);
  const state = storedState(m, captures, operation.state);
  return {
    stored: { i: operationKey(operation.meta.operationId), m: meta.stored, ...(state.stored && { s: state.stored }) },
    writes: [...operationDeletes(m, operation.meta), ...meta.writes, ...state.writes],
  };
}

function storedMeta(m: Reader, captures: CaptureStore, meta: OperationMeta, settings: RunSettings): { stored: ShortForm; writes: Write[] } {
  const known = storedMetas.get(meta);
  if (known) return { stored: known, writes: [] };
  const { operationId, lane: _lane, startedAt, intent, ...rest } = meta;
  const captured = captures.capture(m, settings);
  const open: StoredOpenMeta = {
    ...rest,
    ...(isUuidV7(operationId) ? { startedAfterId: startedAt - uuidv7Timestamp(operationId) } : { startedAt }),
    intent: intent.kind === "run" ? { promptEntryIds: intent.promptEntryIds } : intent,
    settings: captured.key,
  };
  const stored = shortOperationForm(open);
  if (captured.writes.length === 0) storedMetas.set(meta, stored);
  return { stored, writes: captured.writes };
}

/** The leaf as stored, with the generation inline for a generation leaf; none for a fresh `starting`. */
function storedState(m: Reader, captures: CaptureStore, next: OperationState): { stored: ShortForm | undefined; writes: Write[] } {
  const { control, settings: _captured, latestAssistantEntryId, ...leaf } = next;
  if (leaf.at === "starting" && control.status === "running" && latestAssistantEntryId === null) return { stored: undefined, writes: [] };
  const writes: Write[] = [];
  let stored: StoredOperationState;
  if ("generationContext" in leaf) {
    const { generationContext, ...rest } = leaf;
    let limits: Limits | undefined;
    if (rest.at === "assistant.effect_pending") {
      const { intendedOutputLimit, contextWindow, ...lean } = rest;
      limits = { intendedOutputLimit, contextWindow };
      stored = lean;
    } else {
      stored = rest;
    }
    const captured = storedGeneration(m, captures, generationContext, limits);
    writes.push(...captured.writes);
    stored.generation = captured.stored;
  } else {
    stored = leaf;
  }
  if (control.status !== "running") stored.control = control;
  if (latestAssistantEntryId !== null) stored.latestAssistantEntryId = latestAssistantEntryId;
  return { stored: shortOperationForm(stored), writes };
}

function storedGeneration(m: Reader, captures: CaptureStore, generation: GenerationContext, limits: Limits | undefined): { writes: Write[]; stored: StoredGeneration } {
  const content: GenerationCapture = {
    configuration: generation.configuration,
    streamOptions: generation.streamOptions,
    retryPolicy: generation.retryPolicy,
    ...limits,
  };
  const captured = captures.capture(m, content);
  const stored: StoredGeneration = {
    stepId: generation.stepId,
    triggerEntryId: generation.triggerEntryId,
    ...(generation.overflowRecoveryUsed && { overflowRecoveryUsed: true }),
    capture: captured.key,
  };
  return { writes: captured.writes, stored };
}

/**
 * What the terminal transaction (or the first commit storing it in its lane state) deletes of
 * the operation's own values: nothing for an operation its lane state holds (the lane state's
 * rewrite drops it); for one read from an earlier build's values, once, its meta and state rows
 * (either key form) and its separate generation row.
 */
export function operationDeletes(m: Reader, meta: OperationMeta): Write[] {
  if (!readFromRows.delete(meta)) return [];
  const operationId = meta.operationId;
  const legacyGeneration = m.getValue(operationGeneration(operationId)) ? [deleteValue(operationGeneration(operationId))] : [];
  const legacyMeta = legacyOperationMeta(operationId);
  const legacyRows = legacyMeta.key !== operationMeta(operationId).key ? [deleteValue(legacyMeta), deleteValue(legacyOperationState(operationId))] : [];
  return [deleteValue(operationMeta(operationId)), deleteValue(operationState(operationId)), ...legacyRows, ...legacyGeneration];
}

/** The open operation a lane's state value holds; undefined when a part is missing (the caller decides: corruption). */
export function readOpenOperation(m: Reader, lane: string, stored: ReadOpenOperation): { meta: OperationMeta; state: OperationState } | undefined {
  const operationId = operationIdOfKey(stored.i);
  const { startedAt, startedAfterId, intent, ...rest } = longOperationForm(stored.m);
  const started = startedAfterId !== undefined && isUuidV7(operationId) ? uuidv7Timestamp(operationId) + startedAfterId : startedAt;
  if (started === undefined) return undefined;
  const meta: StoredOperationMeta = { ...rest, lane, startedAt: started, intent: "kind" in intent ? intent : { kind: "run", ...intent } };
  return decodeOperation(m, operationId, meta, stored.s ? longOperationForm(stored.s) : undefined);
}

/**
 * An open operation by id, wherever it is stored: in its lane's state, or in an earlier build's
 * separate values; undefined when it is not open or a part is missing.
 */
export function readOperation(m: Pick<SessionReader, "getValue" | "scanValues">, operationId: string): { meta: OperationMeta; state: OperationState } | undefined {
  const key = operationKey(operationId);
  for (const lane of m.scanValues(laneStatePrefix<{ o?: ReadOpenOperation }>())) {
    if (lane.value.o?.i === key) return readOpenOperation(m, lane.address.key, lane.value.o);
  }
  return readOperationRows(m, operationId);
}

/** An operation an earlier build left open, from its separate meta and state values. */
export function readOperationRows(m: Reader, operationId: string): { meta: OperationMeta; state: OperationState } | undefined {
  // Either key form (builtin-addresses operationKey).
  const shortMeta = (m.getValue(operationMeta<StoredOperationMeta & { operationId?: string }>(operationId)) ?? m.getValue(legacyOperationMeta<StoredOperationMeta & { operationId?: string }>(operationId)))?.value;
  if (!shortMeta) return undefined;
  const shortState = (m.getValue(operationState<StoredOperationState>(operationId)) ?? m.getValue(legacyOperationState<StoredOperationState>(operationId)))?.value;
  const { operationId: _legacyId, ...storedMeta } = longOperationForm(shortMeta);
  const operation = decodeOperation(m, operationId, storedMeta, shortState ? longOperationForm(shortState) : undefined);
  if (operation) readFromRows.add(operation.meta);
  return operation;
}

function decodeOperation(m: Reader, operationId: string, storedMeta: StoredOperationMeta, storedState: StoredOperationState | undefined): { meta: OperationMeta; state: OperationState } | undefined {
  const stored: StoredOperationState = storedState ?? { at: "starting" };
  const { settings: capturedSettings, ...metaRest } = storedMeta;
  const meta: OperationMeta = { operationId, ...metaRest };
  const { control, latestAssistantEntryId, settings: legacySettings, generationContext: legacyGeneration, generation, ...leaf } = stored;
  const settings = legacySettings ?? (typeof capturedSettings === "string" ? resolveCapture<RunSettings>(m, capturedSettings) : capturedSettings);
  if (!settings) return undefined;
  const scope = { control: control ?? RUNNING, settings, latestAssistantEntryId: latestAssistantEntryId ?? null };
  if (leaf.at !== "assistant.ready" && leaf.at !== "assistant.effect_pending" && leaf.at !== "assistant.retry_wait") return { meta, state: { ...scope, ...leaf } };
  const resolved = legacyGeneration
    ? { generationContext: legacyGeneration, limits: {} }
    : resolveGeneration(m, generation ?? m.getValue(operationGeneration<StoredGeneration>(operationId))?.value);
  if (!resolved) return undefined;
  const { generationContext } = resolved;
  if (leaf.at !== "assistant.effect_pending") return { meta, state: { ...scope, ...leaf, generationContext } };
  // An effect's limits: in its row (earlier form) or in its generation's capture.
  const intendedOutputLimit = leaf.intendedOutputLimit ?? resolved.limits.intendedOutputLimit;
  const contextWindow = leaf.contextWindow ?? resolved.limits.contextWindow;
  if (intendedOutputLimit === undefined || contextWindow === undefined) return undefined;
  return { meta, state: { ...scope, ...leaf, generationContext, intendedOutputLimit, contextWindow } };
}

function resolveGeneration(m: Reader, stored: StoredGeneration | undefined): { generationContext: GenerationContext; limits: Partial<Limits> } | undefined {
  if (!stored) return undefined;
  const shared = sharedOf(m, stored);
  if (!shared) return undefined;
  return {
    generationContext: {
      stepId: stored.stepId,
      triggerEntryId: stored.triggerEntryId,
      configuration: shared.configuration,
      streamOptions: shared.streamOptions,
      retryPolicy: shared.retryPolicy,
      overflowRecoveryUsed: stored.overflowRecoveryUsed === true,
    },
    limits: { ...(shared.intendedOutputLimit !== undefined && { intendedOutputLimit: shared.intendedOutputLimit }), ...(shared.contextWindow !== undefined && { contextWindow: shared.contextWindow }) },
  };
}

function sharedOf(m: Reader, stored: StoredGeneration): GenerationCapture | undefined {
  if (stored.capture !== undefined) return resolveCapture<GenerationCapture>(m, stored.capture);
  if (stored.configuration === undefined || stored.request === undefined) return undefined;
  const configuration = resolveCapture<GenerationContext["configuration"]>(m, stored.configuration);
  const request = resolveCapture<Pick<GenerationCapture, "streamOptions" | "retryPolicy">>(m, stored.request);
  return configuration && request ? { configuration, ...request } : undefined;
}

/** The earlier stored form of a record: all of it, with or without the operation id. */
type FullStoredResult = Omit<OperationResultRecord, "operationId"> & { operationId?: string };

/**
 * The record as stored since QUALITY P3: every settled operation keeps one forever, so it leaves
 * out what a simple turn would repeat: the operation id (the key), the defaults (`k` absent: a
 * run, `s` absent: completed), null tips, and the end as a duration from the start. A tip that is
 * a UUID is kept packed (`F`, `T`: 22 characters instead of 36, ids.ts packUuid); any other as
 * its text (`f`, `t`).
 */
interface CompactStoredResult {
  k?: OperationKind;
  s?: OperationStatus;
  e?: OperationError;
  f?: string;
  F?: string;
  t?: string;
  T?: string;
  a: number;
  d: number;
  /** The agent version the session was bound to at acceptance. */
  g?: AgentVersionRef;
  /** The lane the operation ran on (absent in records written before it was kept: any lane's). */
  l?: string;
}

/** A tip as stored: nothing for null, packed under the capital key when it is a UUID. */
function storedTip(tip: string | null, key: "f" | "t"): Partial<CompactStoredResult> {
  if (tip === null) return {};
  const packed = packUuid(tip);
  return packed === undefined ? { [key]: tip } : { [key === "f" ? "F" : "T"]: packed };
}

function readTip(text: string | undefined, packed: string | undefined): string | null {
  return text ?? (packed === undefined ? null : unpackUuid(packed));
}

/**
 * The immutable record of a settled operation (reference §3.8), written once by the terminal, with
 * the lane it ran on: an operation id is answered on its own lane only (`readResultOn`).
 */
export function resultWrite(record: OperationResultRecord, lane: string): Write {
  const stored: CompactStoredResult = {
    ...(record.kind !== "run" && { k: record.kind }),
    ...(record.status !== "completed" && { s: record.status }),
    ...(record.error !== undefined && { e: record.error }),
    ...storedTip(record.fromTipId, "f"),
    ...storedTip(record.tipId, "t"),
    a: record.startedAt,
    d: record.endedAt - record.startedAt,
    ...(record.agent !== undefined && { g: record.agent }),
    l: lane,
  };
  return setValue(operationResult<CompactStoredResult>(record.operationId), stored);
}

/**
 * The record of a settled operation as lane `lane` answers it: undefined when it never settled, or
 * when it ran on another lane (a lane's routes, and the browser tokens scoped to lanes, reach that
 * lane's operations only). A record written before lanes were kept in it is every lane's.
 */
export function readResultOn(m: Pick<SessionReader, "getValue">, operationId: string, lane: string): OperationResultRecord | undefined {
  const stored = storedResult(m, operationId);
  if (stored && "l" in stored && stored.l !== undefined && stored.l !== lane) return undefined;
  return stored && decodedResult(operationId, stored);
}

/** The record of a settled operation, however old; undefined when it never settled. */
export function readResult(m: Pick<SessionReader, "getValue">, operationId: string): OperationResultRecord | undefined {
  const stored = storedResult(m, operationId);
  return stored && decodedResult(operationId, stored);
}

function storedResult(m: Pick<SessionReader, "getValue">, operationId: string): CompactStoredResult | FullStoredResult | undefined {
  return m.getValue(operationResult<CompactStoredResult | FullStoredResult>(operationId))?.value;
}

/** A record in either stored form, as the API answers it. */
function decodedResult(operationId: string, stored: CompactStoredResult | FullStoredResult): OperationResultRecord {
  if ("kind" in stored) {
    const { operationId: _legacyId, ...rest } = stored;
    return { operationId, ...rest };
  }
  // The key order of the record as the terminal builds it: the API serializes it as read.
  return {
    operationId,
    kind: stored.k ?? "run",
    status: stored.s ?? "completed",
    ...(stored.e !== undefined && { error: stored.e }),
    fromTipId: readTip(stored.f, stored.F),
    tipId: readTip(stored.t, stored.T),
    startedAt: stored.a,
    endedAt: stored.a + stored.d,
    ...(stored.g !== undefined && { agent: stored.g }),
  };
}
