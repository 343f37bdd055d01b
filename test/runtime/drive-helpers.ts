import { runInDurableObject } from "cloudflare:test";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { WakeScheduler } from "../../harness/runtime/core.ts";
import type { Result } from "../../harness/runtime/errors.ts";
import { AgentHarness, type OpenOperation } from "../../harness/runtime/harness.ts";
import type { AgentLane, SuspendedRun } from "../../harness/runtime/lane.ts";
import type { DriveOutcome } from "../../harness/runtime/types.ts";
import type { Session } from "../../harness/session/session.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { appendScriptSteps, SessionScriptSource } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { Entry } from "../../schema/entries.ts";
import type { HarnessEvent, OperationResultRecord } from "../../schema/lane.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import { createSession } from "../helpers/sessions.ts";
import { SCRIPT, type Rig } from "./helpers.ts";

// Shared by the drive/abort/retry/classification/convenience tests: a rig that can re-create its
// harness on the same Durable Object (close + reopen), an optional manual clock (the harness takes
// one; retry deadlines become exact), gated hooks and event waits.

/** A manual clock: frozen at `now` until advanced, so computed deadlines are exact. */
export interface ManualClock {
  now: () => number;
  advance(ms: number): void;
}

export function manualClock(start = Date.now()): ManualClock {
  let at = start;
  return {
    now: () => at,
    advance(ms) {
      at += ms;
    },
  };
}

export interface RigOptions {
  model?: { provider: string; modelId: string };
  steps?: ScriptStep[];
  clock?: ManualClock;
}

export interface DriveRig extends Rig {
  /** Open operations reported by `AgentHarness.create`. */
  open: OpenOperation[];
  /** A new harness over the object's current session (a fresh Session after `harness.close()`). */
  reopen(): Promise<DriveRig>;
}

async function openDriveRig(object: SessionObject, options: RigOptions): Promise<DriveRig> {
  const session: Session = object.session();
  const models = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) });
  const wakes: Rig["wakes"] = [];
  const wake: WakeScheduler = {
    due: (lane, operationId, at) => wakes.push({ lane, operationId, at }),
    settled: (lane, operationId) => wakes.push({ lane, operationId, at: "settled" }),
  };
  const { harness, open } = await AgentHarness.create({
    session,
    models,
    seed: { model: options.model ?? SCRIPT },
    wake,
    ...(options.clock && { clock: options.clock.now }),
  });
  const events: HarnessEvent[] = [];
  harness.events.on("*", (event) => {
    events.push(event);
  });
  return { session, harness, events, wakes, open, reopen: () => openDriveRig(object, { ...options, steps: [] }) };
}

/** Runs `body` inside a fresh session object; the script model is the default seed. */
export async function withDriveRig<T>(body: (rig: DriveRig) => Promise<T>, options: RigOptions = {}): Promise<T> {
  const { stub } = await createSession("drv");
  return runInDurableObject(stub, async (object: SessionObject) => {
    if (options.steps && options.steps.length > 0) await appendScriptSteps(object.session(), options.steps);
    return body(await openDriveRig(object, options));
  });
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A hook body that reports it was entered and then waits until released. */
export interface HeldHook {
  entered: Promise<void>;
  release(): void;
  /** The admitted signal the hook saw. */
  signal(): AbortSignal | undefined;
  hold(signal: AbortSignal): Promise<void>;
}

export function heldHook(): HeldHook {
  const entered = deferred();
  const released = deferred();
  let seen: AbortSignal | undefined;
  return {
    entered: entered.promise,
    release: () => released.resolve(),
    signal: () => seen,
    async hold(signal) {
      seen = signal;
      entered.resolve();
      await released.promise;
    },
  };
}

/** The first event (from now on) that matches. */
export function nextEvent(harness: AgentHarness, match: (event: HarnessEvent) => boolean): Promise<HarnessEvent> {
  return new Promise((resolve) => {
    const off = harness.events.on("*", (event) => {
      if (!match(event)) return;
      off();
      resolve(event);
    });
  });
}

export function unwrap<T>(result: Result<T>): T {
  if (!result.ok) throw new Error(`Expected success, got ${JSON.stringify(result.error)}`);
  return result.value;
}

/** The record of a drive that settled. */
export function settledRecord(result: Result<DriveOutcome>): OperationResultRecord {
  const outcome = unwrap(result);
  if (outcome.kind !== "settled") throw new Error(`Expected a settled drive, got ${JSON.stringify(outcome)}`);
  return outcome.outcome;
}

/** The record a convenience returned (never a suspension in these tests). */
export function runRecord(result: Result<OperationResultRecord | SuspendedRun>): OperationResultRecord {
  const value = unwrap(result);
  if (!("kind" in value)) throw new Error(`Expected a record, got ${JSON.stringify(value)}`);
  return value;
}

/** The branch from the root, oldest first. */
export function transcript(lane: AgentLane): Entry[] {
  return lane.findEntries({ order: "oldestFirst" });
}

export function messageOf(entry: Entry | undefined): AgentMessage {
  if (!entry || entry.type !== "message") throw new Error(`Not a message entry: ${JSON.stringify(entry)}`);
  return entry.message;
}

/** A compact view of a message: role plus text (assistant also its stop reason). */
export function brief(message: AgentMessage): string {
  switch (message.role) {
    case "user":
      return `user: ${typeof message.content === "string" ? message.content : message.content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("")}`;
    case "assistant":
      return `assistant(${message.stopReason}): ${message.content.map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? `[call ${b.name}]` : `[${b.type}]`)).join("")}`;
    case "toolResult":
      return `toolResult(${message.toolName}${message.isError ? ", error" : ""}): ${message.content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("")}`;
    default:
      return message.role;
  }
}

export function briefs(lane: AgentLane): string[] {
  return transcript(lane).map((entry) => (entry.type === "message" ? brief(entry.message) : entry.type));
}

/** Event types, without the time-throttled `message_update`. */
export function kinds(events: readonly HarnessEvent[]): string[] {
  return events.filter((event) => event.type !== "message_update").map((event) => event.type);
}

export function ofType<T extends HarnessEvent["type"]>(events: readonly HarnessEvent[], type: T): Extract<HarnessEvent, { type: T }>[] {
  return events.filter((event): event is Extract<HarnessEvent, { type: T }> => event.type === type);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME_KEYS = new Set(["timestamp", "startedAt", "endedAt", "requestedAt", "notBefore", "seq", "expiresAt", "durationMs"]);

/**
 * A JSON-shaped copy with every UUID replaced by `#n` (numbered by first appearance, so the
 * structure of references survives) and every time/seq field replaced by `<t>`.
 */
export function normalized(value: unknown): unknown {
  const ids = new Map<string, string>();
  const walk = (node: unknown, key?: string): unknown => {
    if (key !== undefined && TIME_KEYS.has(key) && typeof node === "number") return "<t>";
    if (typeof node === "string" && UUID.test(node)) {
      const known = ids.get(node) ?? `#${ids.size + 1}`;
      ids.set(node, known);
      return known;
    }
    if (Array.isArray(node)) return node.map((item) => walk(item));
    if (typeof node === "object" && node !== null) {
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, k)]));
    }
    return node;
  };
  return walk(JSON.parse(JSON.stringify(value)));
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
