import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { HookName } from "../../harness/execution/hooks.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import type { Result } from "../../harness/runtime/errors.ts";
import { AgentHarness, type OpenOperation } from "../../harness/runtime/harness.ts";
import type { ToolsPort } from "../../harness/execution/tools.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { DriveOutcome, OperationState } from "../../harness/runtime/types.ts";
import type { Session } from "../../harness/session/session.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { appendScriptSteps, scriptedCursor, scriptedSteps, SessionScriptSource } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { Entry } from "../../schema/entries.ts";
import type { HarnessEvent, OperationResultRecord } from "../../schema/lane.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { createSession, sessionStub } from "../helpers/sessions.ts";
import { SCRIPT } from "./helpers.ts";
import { objectInvariants } from "./invariants.ts";

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
