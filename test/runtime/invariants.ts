import { readOperation, readResult } from "../../harness/runtime/operation-codec.ts";
import { openOperations } from "../../harness/runtime/restore.ts";
import { readLaneState, type ReadLaneState } from "../../harness/runtime/lane-state-form.ts";
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { HookName } from "../../harness/execution/hooks.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import type { Result } from "../../harness/runtime/errors.ts";
import { AgentHarness, type OpenOperation } from "../../harness/runtime/harness.ts";
import type { ToolsPort } from "../../harness/execution/tools.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { DriveOutcome, OperationState } from "../../harness/runtime/types.ts";
import { list, value } from "../../harness/session/addresses.ts";
import { branchTipInventoryPrefix, operationIdOfKey, operationResult, pendingEntry } from "../../harness/session/builtin-addresses.ts";
import type { Session } from "../../harness/session/session.ts";
import type { UsageScan } from "../../harness/session/storage.ts";
import { addUsage, zeroUsage } from "../../harness/session/usage.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { appendScriptSteps, scriptedCursor, scriptedSteps, SessionScriptSource } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { Entry } from "../../schema/entries.ts";
import type { HarnessEvent, LaneSnapshot, OperationResultRecord } from "../../schema/lane.ts";
import { isRebase, reduceLaneSnapshot } from "../../schema/reduce-lane-snapshot.ts";
import type { WatchHandle } from "../../harness/runtime/watch.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { createSession, sessionStub } from "../helpers/sessions.ts";
import { SCRIPT } from "./helpers.ts";
import type { Usage, UsageRow } from "../../schema/usage.ts";

// Test support for the crash matrix (QUALITY R1) and fold equivalence (reference §5.4): the
// invariant checker, the crash rig (park, kill, reopen, drive) and the watch-fold helpers.
//
// The durable invariants of QUALITY R1 (reference §1.4 lifetimes, §1.7 ledger, §3.7 inbox, §3.8
// terminal suffix), checked by reading storage only. Returns every violation found, so a test can
// `expect(checkInvariants(session)).toEqual([])` and see all of them at once when one fails.

/** The usage ledger reader (Session does not expose it; the object's SQL storage does). */
export interface UsageLedger {
  scanUsage(scan?: UsageScan): UsageRow[];
}

export interface InvariantOptions {
  /** Restrict the lane-scoped checks to this lane (session-wide checks always run). */
  lane?: string;
  /** When given, `stats.usage` must equal the sum of the ledger rows, and each assistant entry's usage its one row. */
  ledger?: UsageLedger;
  /**
   * Texts of the inputs queued (steer, followUp, nextRun) during the test: each must be found exactly
   * once, placed as a user entry or still queued as a pending payload (queued input is never lost
   * and never placed twice).
   */
  queued?: readonly string[];
  /** Executions of each tool counted at the tool itself: a `replay: "never"` tool runs at most once per call. */
  effects?: readonly { tool: string; replay: "never" | "safe"; executions: number }[];
}

/** Operation-owned value namespaces; keys start with the operation id (`op` or `op:…`). */
const OPERATION_NAMESPACES = ["pi.op.meta", "pi.op.state", "pi.op.generation", "pi.op.tool_args", "pi.op.tool_memo", "pi.op.tool_result", "pi.op.preparation", "pi.pending.tool_output"] as const;

export function checkInvariants(session: Session, options: InvariantOptions = {}): string[] {
  const violations: string[] = [];
  const fail = (message: string): void => {
    violations.push(message);
  };

  // Entries: unique ids, existing parents.
  const entries = session.findEntries({ order: "asc" });
  const byId = new Map<string, Entry>();
  for (const entry of entries) {
    if (byId.has(entry.id)) fail(`entry ${entry.id} appears twice`);
    byId.set(entry.id, entry);
  }
  for (const entry of entries) {
    if (entry.parentId !== null && !byId.has(entry.parentId)) fail(`entry ${entry.id} names a missing parent ${entry.parentId}`);
  }
  // No entry duplicated under another id: each tool call is answered by one placed result.
  const answered = new Set<string>();
  for (const entry of entries) {
    if (entry.type !== "message" || entry.message.role !== "toolResult") continue;
    if (answered.has(entry.message.toolCallId)) fail(`tool call ${entry.message.toolCallId} has two placed results`);
    answered.add(entry.message.toolCallId);
  }

  // Branch tips (every lane is a branch) point at existing entries.
  for (const tip of session.scanValues(branchTipInventoryPrefix())) {
    if (tip.value !== null && !byId.has(tip.value)) fail(`branch "${tip.address.key}" tip ${tip.value} does not exist`);
  }

  // Lanes: current operations are complete, last operations have their record.
  const allLanes = session.scanValues(value<ReadLaneState>("pi.lane.state", "")).map((stored) => ({ name: stored.address.key, state: readLaneState(stored.value) }));
  const lanes = options.lane === undefined ? allLanes : allLanes.filter((lane) => lane.name === options.lane);
  if (options.lane !== undefined && lanes.length === 0) fail(`lane "${options.lane}" has no durable state`);
  // The current operation of a lane is the open one whose meta names it (at most one per lane).
  let open = new Map<string, string>();
  try {
    open = openOperations(session);
  } catch (error) {
    fail(`open operations: ${error instanceof Error ? error.message : String(error)}`);
  }
  const current = new Map<string, { lane: string; state: OperationState | undefined }>();
  for (const [name, op] of open) {
    if (!allLanes.some((lane) => lane.name === name)) fail(`open operation ${op} names lane "${name}", which has no durable state`);
    current.set(op, { lane: name, state: readOperation(session, op)?.state });
  }
  for (const { name, state } of lanes) {
    const tip = session.getValue(value<string | null>("pi.branch.tip", name));
    if (!tip) fail(`lane "${name}" has no tip value`);
    if (state.lastOperationId !== null) {
      const record = readResult(session, state.lastOperationId);
      if (!record) fail(`lane "${name}" last operation ${state.lastOperationId} has no pi.result record`);
      else if (record.operationId !== state.lastOperationId) fail(`pi.result/${state.lastOperationId} names ${record.operationId}`);
    }
    const op = open.get(name);
    if (op !== undefined) {
      const meta = readOperation(session, op)?.meta;
      if (!meta) fail(`lane "${name}" current operation ${op} has no stored meta`);
      else if (meta.lane !== name) fail(`operation ${op} is current on "${name}" but belongs to "${meta.lane}"`);
      if (!current.get(op)?.state) fail(`lane "${name}" current operation ${op} has no stored state`);
      if (session.getValue(operationResult(op))) fail(`current operation ${op} already has a pi.result record`);
    }
    // Queued input: every inbox item has its payload and is not placed yet.
    for (const item of state.inbox) {
      if (!session.getValue(pendingEntry(item.entryId))) fail(`inbox item ${item.entryId} (${item.kind}) of "${name}" has no pending payload`);
      if (byId.has(item.entryId)) fail(`inbox item ${item.entryId} of "${name}" is also a placed entry`);
    }
  }

  // Records: one immutable record per terminal operation; nothing operation-owned survives it.
  const records = session.scanValues(value<OperationResultRecord>("pi.result", ""));
  const terminal = new Set<string>();
  for (const stored of records) {
    const op = stored.address.key;
    terminal.add(op);
    const record = readResult(session, op);
    if (record?.operationId !== op) fail(`pi.result/${op} does not read back as its own record`);
    if ((stored.value.status === "failed") !== (stored.value.error !== undefined)) fail(`pi.result/${op} has error iff failed broken (${stored.value.status})`);
    if (current.has(op)) fail(`operation ${op} has a record but is still current`);
  }
  for (const namespace of OPERATION_NAMESPACES) {
    for (const stored of session.scanValues(value<unknown>(namespace, ""))) {
      const op = operationIdOfKey(stored.address.key.split(":")[0] ?? "");
      if (terminal.has(op)) fail(`${namespace}/${stored.address.key} survives the terminal of ${op}`);
      else if (!current.has(op)) fail(`${namespace}/${stored.address.key} belongs to no current operation`);
    }
  }

  // Frame lists exist only for the current response of a current effect_pending operation. The
  // candidate response ids are every assistant entry (a settled response) plus that response.
  const assistantIds = entries.filter((entry) => entry.type === "message" && entry.message.role === "assistant").map((entry) => entry.id);
  for (const op of [...terminal, ...current.keys()]) {
    for (const responseId of assistantIds) {
      if (session.readList(list<unknown>("pi.pending.assistant_frame", `${op}:${responseId}`), { limit: 1 }).length > 0) {
        fail(`pi.pending.assistant_frame/${op}:${responseId} survives settlement`);
      }
    }
  }

  // Pending payloads: each belongs to an inbox item or to a staged outcome of a live tool batch,
  // and a reserved result id is never in two representations at once.
  const owners = new Set<string>();
  for (const { state } of allLanes) for (const item of state.inbox) owners.add(item.entryId);
  for (const [op, { state }] of current) {
    if (state?.at !== "tools") continue;
    for (const call of state.batch.calls) {
      const staged = session.getValue(pendingEntry(call.resultEntryId)) !== undefined;
      const placed = byId.has(call.resultEntryId);
      if (call.status === "outcome_ready") {
        owners.add(call.resultEntryId);
        if (!staged) fail(`staged outcome ${call.resultEntryId} of ${op} has no pending payload`);
      } else if (staged) fail(`tool result ${call.resultEntryId} of ${op} is pending while ${call.status}`);
      if ((call.status === "completed") !== placed) fail(`tool result ${call.resultEntryId} of ${op} is ${call.status} but ${placed ? "placed" : "not placed"}`);
    }
  }
  for (const stored of session.scanValues(pendingEntry(""))) {
    if (!owners.has(stored.address.key)) fail(`pi.pending.entry/${stored.address.key} is orphaned (no inbox item, no staged outcome)`);
    if (byId.has(stored.address.key)) fail(`pi.pending.entry/${stored.address.key} coexists with its placed entry`);
  }

  // Stats are a projection: message count and the ledger sum.
  const stats = session.getStats();
  const messages = entries.filter((entry) => entry.type === "message").length;
  if (stats.messageCount !== messages) fail(`stats.messageCount ${stats.messageCount} ≠ ${messages} message entries`);
  if (options.ledger) {
    const rows = options.ledger.scanUsage();
    const sum = rows.reduce((total: Usage, row) => addUsage(total, row.usage), zeroUsage());
    const drift = usageDrift(stats.usage, sum);
    if (drift) fail(`stats.usage ≠ ledger sum (${drift})`);
    // Usage exact: every assistant response has exactly one row, holding exactly its usage.
    for (const entry of entries) {
      if (entry.type !== "message" || entry.message.role !== "assistant") continue;
      const own = rows.filter((row) => row.entryId === entry.id);
      if (own.length !== 1) fail(`assistant entry ${entry.id} has ${own.length} usage rows`);
      const rowDrift = own[0] && usageDrift(own[0].usage, entry.message.usage);
      if (rowDrift) fail(`usage row of ${entry.id} ≠ its message's usage (${rowDrift})`);
    }
  }
  for (const text of options.queued ?? []) {
    const placed = entries.filter((entry) => entry.type === "message" && entry.message.role === "user" && userText(entry.message.content) === text).length;
    const pending = session.scanValues(pendingEntry("")).filter((stored) => JSON.stringify(stored.value).includes(JSON.stringify(text))).length;
    if (placed + pending !== 1) fail(`queued input "${text}" is placed ${placed} and pending ${pending} times (expected once in all)`);
  }
  for (const effect of options.effects ?? []) {
    if (effect.replay === "never" && effect.executions > 1) fail(`replay "never" tool ${effect.tool} executed ${effect.executions} times`);
  }
  return violations;
}

function userText(content: string | readonly { type: string; text?: string }[]): string {
  return typeof content === "string" ? content : content.map((block) => block.text ?? "").join("");
}

function usageDrift(a: Usage, b: Usage): string | undefined {
  const pairs: [string, number | undefined, number | undefined][] = [
    ["input", a.input, b.input],
    ["output", a.output, b.output],
    ["cacheRead", a.cacheRead, b.cacheRead],
    ["cacheWrite", a.cacheWrite, b.cacheWrite],
    ["totalTokens", a.totalTokens, b.totalTokens],
    ["cost.total", a.cost.total, b.cost.total],
    ["reasoning", a.reasoning ?? 0, b.reasoning ?? 0],
  ];
  const off = pairs.filter(([, x, y]) => Math.abs((x ?? 0) - (y ?? 0)) > 1e-9).map(([name, x, y]) => `${name}: ${x} vs ${y}`);
  return off.length > 0 ? off.join(", ") : undefined;
}

/** The invariants of the session hosted by a Durable Object, with its SQL usage ledger. */
export function objectInvariants(instance: SessionObject, state: DurableObjectState, lane?: string, more: Pick<InvariantOptions, "queued" | "effects"> = {}): string[] {
  const ledger = SqlSessionStorage.open(state.storage);
  if (!ledger) return ["no session is stored in this object"];
  return checkInvariants(instance.session(), { ...(lane !== undefined && { lane }), ledger, ...more });
}

// The crash rig (QUALITY R1, reference §4.6, §9.3 Tier A): a harness attached to the session of a
// real Durable Object with no wake scheduler (no due-work rows, so no alarm races the test), which
// a test parks at a chosen leaf, kills with abortAllDurableObjects(), and re-attaches to the
// fresh object.

export interface Attached {
  session: Session;
  harness: AgentHarness;
  open: OpenOperation[];
  events: HarnessEvent[];
}

/** Attaches a new harness (scripted models, seed `scripted/script`) to the object's session. */
export async function attach(
  instance: SessionObject,
  options: { clock?: () => number; tools?: (session: Session) => ToolsPort; liveUpdateIntervalMs?: (lane: string) => number } = {},
): Promise<Attached> {
  const session = instance.session();
  const models = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) });
  const tools = options.tools?.(session);
  const { harness, open } = await AgentHarness.create({ session, models, seed: { model: SCRIPT },
    ...(tools && { tools }),
    ...(options.clock && { clock: options.clock }),
    ...(options.liveUpdateIntervalMs && { liveUpdateIntervalMs: options.liveUpdateIntervalMs }),
  });
  const events: HarnessEvent[] = [];
  harness.events.on("*", (event) => {
    events.push(event);
  });
  return { session, harness, open, events };
}

/** A promise that never settles: a hook or listener returning it parks the pass until the kill. */
export function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

/** Bounded polling (no timing assertion): waits until `condition` holds, or fails naming `label`. */
export async function until(condition: () => boolean, label: string, tries = 2000): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`Timed out waiting for ${label}`);
}

/** Accepts a prompt and returns the operation id. */
export async function acceptPrompt(lane: AgentLane, prompt: string): Promise<string> {
  const admitted = await lane.accept({ kind: "prompt", prompt });
  if (!admitted.ok) throw new Error(`accept failed: ${JSON.stringify(admitted.error)}`);
  return admitted.value.operationId;
}

/** Starts the pass in the background (the kill ends it); its rejection is observed. */
export function startPass(lane: AgentLane, operationId: string): void {
  lane.drive({ operationId }).catch(() => undefined);
}

/** The leaf the lane's projection is at (undefined when idle). */
export function leafOf(lane: AgentLane): string | undefined {
  return lane.state.operation?.state.at;
}

/** How many script steps the provider has taken (the cursor moves when a request is admitted). */
export function stepsTaken(session: Session): number {
  const cursor = session.getValue(scriptedCursor)?.value;
  if (cursor === undefined) return 0;
  return session.readList(scriptedSteps, { limit: 10_000 }).filter((element) => element.seq <= cursor).length;
}

/** A transcript reduced to what an uninterrupted run and a recovered one must share. */
export type Shape = { role: string; stopReason?: string; text: string; isError?: boolean };

export function shapeOf(entries: readonly Entry[]): Shape[] {
  return entries.map((entry): Shape => {
    if (entry.type !== "message") return { role: entry.type, text: "" };
    const message = entry.message;
    switch (message.role) {
      case "user":
        return { role: "user", text: typeof message.content === "string" ? message.content : textOf(message.content) };
      case "assistant":
        return { role: "assistant", stopReason: message.stopReason, text: textOf(message.content) };
      case "toolResult":
        return { role: "toolResult", text: textOf(message.content), isError: message.isError };
      default:
        return { role: message.role, text: "" };
    }
  });
}

function textOf(content: readonly { type: string; text?: string; name?: string }[]): string {
  return content.map((block) => (block.type === "text" ? (block.text ?? "") : block.type === "toolCall" ? `[call ${block.name ?? ""}]` : "")).join("");
}

/** The main lane's transcript, oldest first. */
export function transcriptOf(lane: AgentLane): Entry[] {
  return lane.findEntries({ order: "oldestFirst" });
}

export interface BaselineSetup extends Pick<CrashScenario, "tools" | "activeTools" | "accept" | "drive"> {
  steps: ScriptStep[];
  settings?: HarnessSettingsPatch;
  prompt?: string;
  /** Registers hooks on the harness before the run (the same ones, resolving, as the crashed run). */
  prepare?: (rig: Attached, lane: AgentLane) => void;
}

/** The same script (and intent, when `accept`/`drive` say) run uninterrupted in a fresh object: its transcript shape and record. */
export async function baseline(setup: BaselineSetup): Promise<{ shape: Shape[]; record: OperationResultRecord; violations: string[] }> {
  const { stub } = await createSession("baseline");
  return runInDurableObject(stub, async (instance: SessionObject, state) => {
    await appendScriptSteps(instance.session(), setup.steps);
    const rig = await attach(instance, { ...(setup.tools && { tools: setup.tools }) });
    if (setup.settings) await rig.harness.updateSettings(setup.settings);
    const lane = await rig.harness.lane("main");
    if (setup.activeTools) await lane.setActiveTools(setup.activeTools);
    setup.prepare?.(rig, lane);
    const operationId = setup.accept ? await setup.accept(rig, lane) : await acceptPrompt(lane, setup.prompt ?? "go");
    const driven = await (setup.drive ?? ((l, id) => l.drive({ operationId: id, waitForRetry: true })))(lane, operationId);
    if (!driven.ok || driven.value.kind !== "settled") throw new Error(`baseline did not settle: ${JSON.stringify(driven)}`);
    return { shape: shapeOf(transcriptOf(lane)), record: driven.value.outcome, violations: objectInvariants(instance, state) };
  });
}

/** A `park` that holds the first pass inside the named hook pipeline until the object is killed. */
export function parkInHook(name: HookName): CrashScenario["park"] {
  return ({ harness }) => {
    let entered = false;
    harness.hooks.on(name, () => {
      entered = true;
      return never();
    });
    return () => entered;
  };
}

export interface CrashScenario {
  steps: ScriptStep[];
  settings?: HarnessSettingsPatch;
  prompt?: string;
  /** Registers what parks the first pass; returns the predicate "the pass is parked". */
  park: (rig: Attached, lane: AgentLane) => () => boolean;
  /** Runs while the pass is parked, before the kill (enqueue, inspect…). */
  whileParked?: (rig: Attached, lane: AgentLane, operationId: string) => Promise<void>;
  /** Prepares the reopened harness before it drives (hooks that count reruns…). */
  reopen?: (rig: Attached, lane: AgentLane) => void;
  /** The clock of the reopened harness. */
  clock?: () => number;
  /** The lane's active tools, set before the prompt. */
  activeTools?: string[];
  /** The tools both harnesses resolve (built over each object's own session). */
  tools?: (session: Session) => ToolsPort;
  /** How the reopened harness drives (default: the operation id with waitForRetry). */
  drive?: (lane: AgentLane, operationId: string) => Promise<Result<DriveOutcome>>;
  /** Accepts the operation that is parked (default: a prompt run); returns its id. */
  accept?: (rig: Attached, lane: AgentLane) => Promise<string>;
  /** Texts queued while parked, for the invariant "queued input never lost" (InvariantOptions.queued). */
  queued?: () => readonly string[];
}

export interface Crashed {
  operationId: string;
  /** The operation state the first pass was parked at (null: it had settled), and what the fresh object restored. */
  parked: OperationState | null;
  restored: OperationState | null;
  open: OpenOperation[];
  stepsAtKill: number;
  stepsAfter: number;
  driven: Result<DriveOutcome>;
  transcript: Entry[];
  shape: Shape[];
  events: HarnessEvent[];
  usageRows: number;
  idle: boolean;
  violations: string[];
}

/**
 * Parks an operation at a leaf in one object, REALLY kills every object, re-attaches a harness to
 * the fresh object and drives the same operation id. The first pass never resumes: the kill ends it.
 */
export async function crashAt(scenario: CrashScenario): Promise<Crashed> {
  const { name, stub } = await createSession("crash");
  const first = await runInDurableObject(stub, async (instance: SessionObject) => {
    await appendScriptSteps(instance.session(), scenario.steps);
    const rig = await attach(instance, { ...(scenario.tools && { tools: scenario.tools }) });
    if (scenario.settings) await rig.harness.updateSettings(scenario.settings);
    const lane = await rig.harness.lane("main");
    if (scenario.activeTools) await lane.setActiveTools(scenario.activeTools);
    const parked = scenario.park(rig, lane);
    const operationId = scenario.accept ? await scenario.accept(rig, lane) : await acceptPrompt(lane, scenario.prompt ?? "go");
    startPass(lane, operationId);
    await until(parked, "the pass to park");
    await scenario.whileParked?.(rig, lane, operationId);
    return { operationId, parked: lane.state.operation?.state ?? null, stepsAtKill: stepsTaken(rig.session) };
  });
  await abortAllDurableObjects();
  return runInDurableObject(sessionStub(name), async (instance: SessionObject, state) => {
    // The restarted object armed its alarm for the open operation (due-work.ts restartAlarmAt):
    // delivered, it would drive the operation with the object's own harness, a second driver
    // racing the rig's. The rig is the only driver here, so the alarm goes.
    await state.storage.deleteAlarm();
    const rig = await attach(instance, { ...(scenario.clock && { clock: scenario.clock }), ...(scenario.tools && { tools: scenario.tools }) });
    const lane = rig.harness.getLane("main");
    if (!lane) throw new Error("the lane was not restored");
    const restored = lane.state.operation?.state ?? null;
    scenario.reopen?.(rig, lane);
    const driven = await (scenario.drive ?? ((l, operationId) => l.drive({ operationId, waitForRetry: true })))(lane, first.operationId);
    const transcript = transcriptOf(lane);
    return {
      ...first,
      restored,
      open: rig.open,
      stepsAfter: stepsTaken(rig.session),
      driven,
      transcript,
      shape: shapeOf(transcript),
      events: rig.events,
      usageRows: SqlSessionStorage.open(state.storage)?.scanUsage().length ?? -1,
      idle: lane.state.operation === null,
      violations: objectInvariants(instance, state, undefined, { ...(scenario.queued && { queued: scenario.queued() }) }),
    };
  });
}

/** The record of a settled drive, or a failure naming what came back instead. */
export function settledRecord(driven: Result<DriveOutcome>): OperationResultRecord {
  if (!driven.ok || driven.value.kind !== "settled") throw new Error(`expected a settled drive, got ${JSON.stringify(driven)}`);
  return driven.value.outcome;
}

// Fold equivalence (reference §5.4, ARCHITECTURE D13): a watch snapshot folded over its own later
// events must equal a later snapshot.

export interface Watched {
  watch: WatchHandle;
  /** A deep copy of the snapshot as captured (reduceLaneSnapshot must never mutate it). */
  captured: LaneSnapshot;
  events: HarnessEvent[];
}

/** Opens a watch and starts collecting its events at once. */
export async function openWatched(lane: AgentLane): Promise<Watched> {
  const watch = await lane.watch();
  const captured = structuredClone(watch.snapshot);
  const events: HarnessEvent[] = [];
  watch.start((event) => {
    events.push(event);
  });
  return { watch, captured, events };
}

/** Folds a snapshot over events with the normative reducer; a rebase fails the fold. */
export function foldEvents(snapshot: LaneSnapshot, events: readonly HarnessEvent[]): LaneSnapshot {
  let folded = snapshot;
  for (const event of events) {
    const next = reduceLaneSnapshot(folded, event);
    if (isRebase(next)) throw new Error(`unexpected rebase at ${event.type}`);
    folded = next;
  }
  return folded;
}

/** Waits until every batch bound so far has been delivered (an empty batch joins the tail). */
export function deliveredSoFar(harness: AgentHarness): Promise<void> {
  return harness.events.emitBatch([]);
}

/** The folded snapshot and a fresh capture, after every bound event was delivered. */
export async function foldAndCapture(harness: AgentHarness, lane: AgentLane, watched: Watched): Promise<{ folded: LaneSnapshot; fresh: LaneSnapshot }> {
  await deliveredSoFar(harness);
  const folded = foldEvents(watched.watch.snapshot, watched.events);
  const later = await lane.watch();
  later.unsubscribe();
  return { folded, fresh: later.snapshot };
}
