import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import type { SessionObject } from "../../../durable-objects/session/session-object.ts";
import type { ToolsPort } from "../../../harness/execution/tools.ts";
import type { AgentLane } from "../../../harness/runtime/lane.ts";
import type { Session } from "../../../harness/session/session.ts";
import { appendScriptSteps } from "../../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../../models/scripted/steps.ts";
import type { HarnessSettingsPatch } from "../../../schema/settings-patch.ts";
import { createSession, sessionStub } from "../../helpers/sessions.ts";
import { objectInvariants } from "../invariants.ts";
import { attach, shapeOf, transcriptOf, until, type Attached } from "../crash-rig.ts";

// The race rig (reference §9.2, §9.3 Tier C): a harness over a real SessionObject's session, with
// the session's mutation line held by the test so that two contenders queue on it in the order the
// test issues them. Every commit of the harness goes through `Session.mutate`, which takes the line
// in call order, so "A then B on the line" is forced, never timed. After the race the durable
// invariants (test/runtime/invariants.ts) are checked on the object's storage.

/** The session's mutation line, held by the test; counts the mutations that asked for it. */
export interface LineGate {
  /** Mutations (of the harness) that have asked for the line since the latest `hold`. */
  readonly arrivals: number;
  /** Takes the line (and restarts the count); every later mutation queues behind it until `release`. */
  hold(): Promise<void>;
  release(): void;
  /** Waits until `count` mutations have asked for the line since the latest `hold` (bounded polling). */
  arrived(count: number, label: string): Promise<void>;
}

export function lineGate(session: Session): LineGate {
  let arrivals = 0;
  let end: (() => void) | undefined;
  const begin = session.beginMutation.bind(session);
  session.beginMutation = () => {
    arrivals++;
    return begin();
  };
  return {
    get arrivals() {
      return arrivals;
    },
    async hold() {
      const scope = await begin();
      arrivals = 0;
      end = () => scope.end();
    },
    release() {
      end?.();
      end = undefined;
    },
    arrived: (count, label) => until(() => arrivals >= count, label),
  };
}

export interface RaceRig extends Attached {
  lane: AgentLane;
  line: LineGate;
  /** A new harness over the same object's storage (after this one was closed), as a restart would. */
  reopen(): Promise<RaceRig>;
}

export interface RaceOptions {
  steps?: ScriptStep[];
  settings?: HarnessSettingsPatch;
  tools?: (session: Session) => ToolsPort;
  activeTools?: string[];
}

/** What a race run hands back: the outcome it observed and the invariant violations after it. */
export interface RaceResult<T> {
  outcome: T;
  violations: string[];
}

async function openRaceRig(instance: SessionObject, options: RaceOptions, fresh = true): Promise<RaceRig> {
  const rig = await attach(instance, { ...(options.tools && { tools: options.tools }) });
  if (fresh && options.settings) await rig.harness.updateSettings(options.settings);
  const lane = rig.harness.getLane("main") ?? (await rig.harness.lane("main"));
  if (fresh && options.activeTools) await lane.setActiveTools(options.activeTools);
  return { ...rig, lane, line: lineGate(rig.session), reopen: () => openRaceRig(instance, options, false) };
}

/** Runs one order of a race in a fresh session object; the invariants are read after it. */
export async function race<T>(options: RaceOptions, body: (rig: RaceRig) => Promise<T>): Promise<RaceResult<T>> {
  const { stub } = await createSession("race");
  return runInDurableObject(stub, async (instance: SessionObject, state) => {
    if (options.steps) await appendScriptSteps(instance.session(), options.steps);
    const outcome = await body(await openRaceRig(instance, options));
    return { outcome, violations: objectInvariants(instance, state) };
  });
}

/**
 * A race whose first half ends in a real kill of every object (abortAllDurableObjects): `before`
 * runs in the first object, `after` in the fresh one (a new harness attached to the same storage).
 */
export async function raceAcrossKill<T, U>(
  options: RaceOptions,
  before: (rig: RaceRig) => Promise<T>,
  after: (rig: RaceRig, first: T) => Promise<U>,
): Promise<RaceResult<U>> {
  const { name, stub } = await createSession("race-kill");
  const first = await runInDurableObject(stub, async (instance: SessionObject) => {
    if (options.steps) await appendScriptSteps(instance.session(), options.steps);
    return before(await openRaceRig(instance, options));
  });
  await abortAllDurableObjects();
  return runInDurableObject(sessionStub(name), async (instance: SessionObject, state) => {
    const outcome = await after(await openRaceRig(instance, options, false), first);
    return { outcome, violations: objectInvariants(instance, state) };
  });
}

/** Which contender reaches the line first in one order of a race. */
export type First = "A" | "B";

/** A result's tag: "ok", or the error code of a failed lane result. */
export function tag(result: { ok: true } | { ok: false; error: { code: string } }): string {
  return result.ok ? "ok" : result.error.code;
}

/** The transcript of the main lane as role/text rows (what both orders are compared on). */
export function rows(lane: AgentLane): string[] {
  return shapeOf(transcriptOf(lane)).map((row) => {
    const role = `${row.role}${row.stopReason && row.stopReason !== "stop" ? `(${row.stopReason})` : ""}${row.isError ? "(error)" : ""}`;
    return row.text === "" ? role : `${role}: ${row.text}`;
  });
}

/** A promise the test opens when it wants; `entered` resolves when something starts waiting on it. */
export interface Latch {
  readonly entered: Promise<void>;
  wait(): Promise<void>;
  open(): void;
}

export function latch(): Latch {
  let enter!: () => void;
  let open!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    entered,
    wait() {
      enter();
      return opened;
    },
    open,
  };
}
