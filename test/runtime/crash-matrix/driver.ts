import { expect } from "vitest";
import type { HarnessEventType } from "../../../schema/lane.ts";
import type { HookName } from "../../../harness/execution/hooks.ts";
import { UNKNOWN_OUTCOME_MESSAGE } from "../../../harness/runtime/drive/assistant/recover.ts";
import type { AgentLane } from "../../../harness/runtime/lane.ts";
import type { OperationState } from "../../../harness/runtime/types.ts";
import { clientToolResult, pendingAssistantFrames, pendingToolOutput } from "../../../harness/session/builtin-addresses.ts";
import { value } from "../../../harness/session/addresses.ts";
import type { ScriptStep } from "../../../models/scripted/steps.ts";
import type { AgentMessage } from "../../../schema/messages.ts";
import type { HarnessSettingsPatch } from "../../../schema/settings-patch.ts";
import { baseline, crashAt, leafOf, never, settledRecord, shapeOf, stepsTaken, until, type Attached, type Crashed } from "../invariants.ts";
import { engineIntent, postClientAnswer, type EngineIntent } from "./intents.ts";
import type { IntentName, MatrixCase } from "./table.ts";

// The engine driver of the crash matrix: one reachable case (leaf × position × intent) becomes a
// crashAt scenario (invariants.ts): the operation is parked at exactly that point in a real
// Durable Object, every object is killed, a fresh object drives the same operation to its end,
// and the result is compared with the same intent run uninterrupted (baseline), adjusted only by
// the documented recovery of the leaf (reference §4.6, §4.8). A nextRun input is queued while the
// operation is parked, and the one invariant checker (checkInvariants) must find it exactly once.

interface Park {
  rig: Attached;
  lane: AgentLane;
  intent: EngineIntent;
  /** True once the history ran: only the operation under test parks. */
  armed: () => boolean;
}

/** What a cell (leaf × position) does to an intent's run to kill it at that point. */
interface CellPlan {
  /**
   * Script changes where the operation's request (or summary request) is taken: steps inserted
   * (lost or failed there) in the crashed run and in the uninterrupted one, or with `replace` the
   * step at `at` replaced in both.
   */
  insert?: (intent: EngineIntent) => { at: number; crashed: ScriptStep[]; baseline: ScriptStep[]; replace?: true };
  /** Settings of both runs; a retry policy here is the crashed run's only (a long backoff, so the wait is durable when the kill comes). */
  settings?: HarnessSettingsPatch;
  /** Hooks every harness of the case has (first, reopened, uninterrupted), so all three run alike. */
  prepare?: (rig: Attached) => void;
  park: (park: Park) => () => boolean;
  /** The first pass (default: the intent driven to its end; the kill ends it). */
  firstPass?: (intent: EngineIntent, lane: AgentLane, operationId: string) => Promise<unknown>;
  /** The reopened harness's clock (a durable wait is due at once). */
  clock?: () => number;
  /** The state the kill must leave (the position, checked on the parked state). */
  check?: (parked: OperationState, park: Pick<Park, "rig">, operationId: string) => void;
  /** The documented recovery: what the recovered transcript has that an uninterrupted run does not. */
  recovery?: "unknown-outcome" | "tool-interruption";
}

const INJECTED: AgentMessage = { role: "user", content: "injected by before_run", timestamp: 1 };
/** Streamed word by word long enough for the throttled frame commits (QUALITY P4) to store two pages. */
const LONG = Array.from({ length: 160 }, (_, i) => `w${i}`).join(" ");
/** The answer to a steer that asked for one more response than the uninterrupted run made. */
const STEERED = "answer after the steer";
const FLAKY: ScriptStep = { error: "flaky upstream", retryable: true };
/** A request admitted and never answered: the kill comes while it is in flight. */
const LOST: ScriptStep = { text: "LOST", delayMs: 600_000 };
const LATER = (delay: number): HarnessSettingsPatch => ({ retry: { enabled: true, maxRetries: 2, baseDelayMs: delay } });
const FAR = () => Date.now() + 24 * 3_600_000;

/** The request step a before_request event names (undefined for every other hook). */
const stepOf = (event: object): string | undefined => ("step" in event && typeof event.step === "string" ? event.step : undefined);

function hookPark(name: HookName, when: (step: string | undefined, lane: AgentLane) => boolean = () => true): CellPlan["park"] {
  return ({ rig, lane, armed }) => {
    let parked = false;
    rig.harness.hooks.on(name, (event) => {
      if (!armed() || !when(stepOf(event), lane)) return {};
      parked = true;
      return never();
    });
    return () => parked;
  };
}

/** Parks in the delivery of an event the pass awaits (bound by the commit just made). */
function eventPark(type: HarnessEventType, when: (lane: AgentLane) => boolean = () => true): CellPlan["park"] {
  return ({ rig, lane, armed }) => {
    let parked = false;
    rig.harness.events.on(type, () => {
      if (!armed() || !when(lane)) return;
      parked = true;
      return never();
    });
    return () => parked;
  };
}

const statePark =
  (holds: (park: Park) => boolean): CellPlan["park"] =>
  (park) =>
  () =>
    park.armed() && holds(park);

const at = (leaf: string) => (lane: AgentLane) => leafOf(lane) === leaf;

function framesOf({ rig, lane }: Park): number {
  const state = lane.state.operation?.state;
  const op = lane.state.operation?.meta.operationId;
  if (op === undefined || (state?.at !== "assistant.effect_pending" && state?.at !== "deferred.effect_pending")) return 0;
  return rig.session.readList(pendingAssistantFrames(op, state.responseEntryId), { limit: 10 }).length;
}

function firstCall(state: OperationState) {
  if (state.at !== "tools") throw new Error(`parked at ${state.at}, not tools`);
  const call = state.batch.calls[0];
  if (!call) throw new Error("an empty batch");
  return call;
}

function hasProgress({ rig, lane }: Park): boolean {
  const state = lane.state.operation?.state;
  const op = lane.state.operation?.meta.operationId;
  if (op === undefined || state?.at !== "tools") return false;
  return state.batch.calls.some((call) => rig.session.getValue(pendingToolOutput(op, call.resultEntryId)) !== undefined);
}

/** The cells the engine driver knows, by `leaf/position`. */
const PLANS: Record<string, CellPlan> = {
  "starting/before_intent": { park: hookPark("before_run"), check: (s) => expect(s.at).toBe("starting") },
  "checkpoint/before_intent": { park: hookPark("before_run_end"), check: (s) => expect(s).toMatchObject({ at: "checkpoint", continuation: { kind: "may_finish" } }) },
  "checkpoint/after_settlement": {
    // A before_run_end handler makes the settlement commit the checkpoint leaf (without one it finishes in the same commit).
    prepare: (rig) => void rig.harness.hooks.on("before_run_end", () => ({})),
    park: eventPark("usage", at("checkpoint")),
    check: (s) => expect(s.at).toBe("checkpoint"),
  },
  "assistant.ready/before_intent": {
    // With before_run's injection placed, the start commit enters assistant.ready (without it the first request is prepared in starting).
    prepare: (rig) => void rig.harness.hooks.on("before_run", () => ({ messages: [INJECTED] })),
    park: hookPark("before_request", (step, lane) => step === "assistant" && leafOf(lane) === "assistant.ready"),
    check: (s) => expect(s.at).toBe("assistant.ready"),
  },
  "assistant.ready/after_settlement": {
    park: eventPark("compaction_end", at("assistant.ready")),
    check: (s) => expect(s.at).toBe("assistant.ready"),
  },
  "assistant.effect_pending/after_intent": {
    // turn_start is bound by the request intent; the pass awaits its delivery before the stream.
    park: eventPark("turn_start", at("assistant.effect_pending")),
    check: (s, { rig }, op) => {
      expect(s.at).toBe("assistant.effect_pending");
      if (s.at === "assistant.effect_pending") expect(rig.session.readList(pendingAssistantFrames(op, s.responseEntryId), { limit: 1 })).toEqual([]);
    },
    recovery: "unknown-outcome",
  },
  "assistant.effect_pending/during_effect": {
    insert: (intent) => ({ at: responseAt(intent), crashed: [{ text: LONG, chunkMs: 4 }], baseline: [] }),
    park: statePark((park) => framesOf(park) >= 2),
    check: (s) => expect(s.at).toBe("assistant.effect_pending"),
    recovery: "unknown-outcome",
  },
  "assistant.retry_wait/after_settlement": {
    insert: (intent) => ({ at: responseAt(intent), crashed: [FLAKY], baseline: [FLAKY] }),
    settings: LATER(3_600_000),
    park: statePark(({ lane }) => leafOf(lane) === "assistant.retry_wait"),
    clock: FAR,
    check: (s) => expect(s.at).toBe("assistant.retry_wait"),
  },
  "tools/before_intent": { park: hookPark("before_tool"), check: (s) => expect(firstCall(s).status).toBe("planned") },
  "tools/after_intent": {
    // tool_start is bound by the call's intent commit; the batch awaits its delivery before the effect.
    park: eventPark("tool_start"),
    check: (s, { rig }, op) => {
      const call = firstCall(s);
      expect(call.status).toBe("effect_pending");
      expect(rig.session.getValue(pendingToolOutput(op, call.resultEntryId))).toBeUndefined();
      expect(rig.session.scanValues(value("pi.op.tool_memo", `${op}:`))).toEqual([]);
    },
  },
  "tools/during_effect": {
    // A tool that runs code: killed after its first durable progress checkpoint. A client call:
    // killed after the client's answer is stored and before a pass staged it.
    park: statePark((park) => hasProgress(park) || clientAnswered(park)),
    firstPass: async (intent, lane, operationId) => {
      if (intent !== engineIntent("client")) return intent.finish(lane, operationId);
      await lane.drive({ operationId });
      await postClientAnswer(lane, operationId);
    },
    check: (s) => expect(firstCall(s).status).toBe("effect_pending"),
  },
  "tools/after_settlement": {
    // tool_end is bound by the staging commit (outcome_ready): after it the call can never run again.
    park: eventPark("tool_end"),
    check: (s) => expect(firstCall(s).status).toBe("outcome_ready"),
  },
  "summary.deciding/before_intent": {
    park: (park) => hookPark(summaryOf(park.intent).hook)(park),
    check: (s) => expect(s.at).toBe("summary.deciding"),
  },
  "summary.ready/before_intent": {
    park: (park) => hookPark("before_request", (step) => step === summaryOf(park.intent).step)(park),
    check: (s) => expect(s.at).toBe("summary.ready"),
  },
  "summary.effect_pending/after_intent": {
    insert: (intent) => ({ at: summaryOf(intent).at, crashed: [LOST], baseline: [] }),
    park: statePark(({ lane, rig, intent }) => leafOf(lane) === "summary.effect_pending" && stepsTaken(rig.session) === summaryOf(intent).at + 1),
    check: (s) => expect(s).toMatchObject({ at: "summary.effect_pending", request: { index: 0 } }),
  },
  "summary.effect_pending/during_effect": {
    // A split turn (keep only the last assistant): two requests per attempt; the first settled its
    // usage, the second is lost; the retry makes both again (H2, then the intent's summary step).
    settings: { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 1 } },
    insert: (intent) => ({ at: summaryOf(intent).at, crashed: [{ text: "H1" }, LOST, { text: "H2" }], baseline: [{ text: "H2" }] }),
    park: statePark(({ lane, rig, intent }) => leafOf(lane) === "summary.effect_pending" && stepsTaken(rig.session) === summaryOf(intent).at + 2),
    check: (s) => expect(s).toMatchObject({ at: "summary.effect_pending", request: { index: 1 } }),
  },
  "summary.retry_wait/after_settlement": {
    insert: (intent) => ({ at: summaryOf(intent).at, crashed: [FLAKY], baseline: [FLAKY] }),
    settings: LATER(3_600_000),
    park: statePark(({ lane }) => leafOf(lane) === "summary.retry_wait"),
    clock: FAR,
    check: (s) => expect(s.at).toBe("summary.retry_wait"),
  },
  "navigation.ready_to_commit/before_intent": {
    park: hookPark("before_drive", (_step, lane) => leafOf(lane) === "navigation.ready_to_commit"),
    check: (s) => expect(s.at).toBe("navigation.ready_to_commit"),
  },
  "deferred.suspended/before_intent": {
    // The first pass has no poll permit: the run rests suspended, before any poll intent.
    firstPass: (_intent, lane, operationId) => lane.drive({ operationId }),
    park: statePark(({ lane }) => leafOf(lane) === "deferred.suspended"),
    check: (s) => expect(s).toMatchObject({ at: "deferred.suspended", poll: 0 }),
  },
  "deferred.suspended/after_settlement": {
    // The response is still pending at the first poll: that poll settles back into suspended.
    insert: () => {
      const pendingTwice: ScriptStep = { deferred: { ready: { deferred: { ready: { text: "the ready answer" } } } } };
      return { at: 0, crashed: [pendingTwice], baseline: [pendingTwice], replace: true };
    },
    firstPass: async (_intent, lane, operationId) => {
      await lane.drive({ operationId });
      return lane.drive({ operationId, pollDeferred: true });
    },
    park: statePark(({ lane }) => lane.state.operation?.state.at === "deferred.suspended" && lane.state.operation.state.poll === 1),
    check: (s) => expect(s).toMatchObject({ at: "deferred.suspended", poll: 1 }),
  },
  "deferred.effect_pending/after_intent": {
    park: eventPark("turn_start", at("deferred.effect_pending")),
    check: (s) => expect(s).toMatchObject({ at: "deferred.effect_pending", poll: 1 }),
  },
  "deferred.effect_pending/during_effect": {
    insert: () => {
      const streamed: ScriptStep = { deferred: { ready: { text: LONG, chunkMs: 4 } } };
      return { at: 0, crashed: [streamed], baseline: [streamed], replace: true };
    },
    park: statePark((park) => framesOf(park) >= 2),
    check: (s) => expect(s).toMatchObject({ at: "deferred.effect_pending", poll: 1 }),
  },
};

function clientAnswered({ rig, lane }: Park): boolean {
  const state = lane.state.operation?.state;
  const op = lane.state.operation?.meta.operationId;
  if (op === undefined || state?.at !== "tools") return false;
  return state.batch.calls.some((call) => rig.session.getValue(clientToolResult(op, call.resultEntryId)) !== undefined);
}

function responseAt(intent: EngineIntent): number {
  if (intent.responseAt === undefined) throw new Error("not a run");
  return intent.responseAt;
}

function summaryOf(intent: EngineIntent): NonNullable<EngineIntent["summary"]> {
  if (!intent.summary) throw new Error("no summary in this intent");
  return intent.summary;
}

function crashSettings(base: HarnessSettingsPatch, cell: HarnessSettingsPatch | undefined): HarnessSettingsPatch {
  if (!cell) return base;
  const compaction = base.compaction || cell.compaction ? { compaction: { ...base.compaction, ...cell.compaction } } : {};
  return { ...base, ...cell, ...compaction };
}

export const planned = (leaf: string, position: string): boolean => `${leaf}/${position}` in PLANS;

function withSteps(steps: readonly ScriptStep[], insert: ReturnType<NonNullable<CellPlan["insert"]>> | undefined, which: "crashed" | "baseline"): ScriptStep[] {
  if (!insert) return [...steps];
  return steps.toSpliced(insert.at, insert.replace ? 1 : 0, ...insert[which]);
}

const baselines = new Map<string, ReturnType<typeof baseline>>();

/** Runs one case of the engine driver: the kill, the recovery, the comparison, the invariants. */
export async function runEngineCase(c: MatrixCase): Promise<void> {
  const plan = PLANS[`${c.leaf}/${c.position}`];
  if (!plan) throw new Error(`no plan for ${c.leaf}/${c.position}`);
  const intent = engineIntent(c.intent, c.leaf === "tools" && c.position === "during_effect");
  const insert = plan.insert?.(intent);
  // A run also gets a steer in flight: placed at the run's next boundary, it may ask for one more
  // response than the uninterrupted run (a spare step answers it), which the comparison takes out.
  const steer = intent.responseAt === undefined || intent.noSteer ? undefined : `steer while parked at ${c.leaf} ${c.position}`;
  const steps = [...withSteps(intent.steps, insert, "crashed"), ...(steer ? [{ text: STEERED }] : [])];
  const baselineSteps = withSteps(intent.steps, insert, "baseline");
  const queuedText = `queued while parked at ${c.leaf} ${c.position}`;
  let armed = false;
  let parkedOperation = "";

  const crashed = await crashAt({
    steps,
    settings: crashSettings(intent.settings, plan.settings),
    ...(intent.tools && { tools: intent.tools }),
    ...(plan.clock && { clock: plan.clock }),
    park: (rig, lane) => {
      plan.prepare?.(rig);
      return plan.park({ rig, lane, intent, armed: () => armed });
    },
    accept: async (rig, lane) => {
      await intent.history(rig, lane);
      armed = true;
      parkedOperation = await intent.start(rig, lane);
      (plan.firstPass ?? ((i, l, id) => i.finish(l, id)))(intent, lane, parkedOperation).catch(() => undefined);
      return parkedOperation;
    },
    whileParked: async (rig, lane, operationId) => {
      const parked = lane.state.operation?.state;
      if (!parked) throw new Error(`${c.leaf}: the operation settled before the kill`);
      plan.check?.(parked, { rig }, operationId);
      // Queued input in flight at the kill: the enqueue commits while the pass is parked (its event
      // delivery may wait behind the parked one, so the projection is awaited, not the call).
      void lane.nextRun(queuedText);
      await until(() => lane.state.inbox.some((item) => item.kind === "nextRun"), "the queued input");
      if (steer) {
        void lane.steer(steer);
        await until(() => lane.state.inbox.some((item) => item.kind === "steer"), "the steer");
      }
    },
    reopen: (rig) => plan.prepare?.(rig),
    drive: (lane, operationId) => intent.finish(lane, operationId),
    queued: () => [queuedText, ...(steer ? [steer] : [])],
  });

  expect(crashed.parked?.at).toBe(c.leaf);
  expect(crashed.restored).toEqual(crashed.parked);
  const record = settledRecord(crashed.driven);
  const baselineSettings = crashSettings(intent.settings, plan.settings && { ...plan.settings, retry: intent.settings.retry });
  // Cells that leave the uninterrupted run alike share it (same intent, script, settings, hooks).
  const key = JSON.stringify([c.intent, baselineSteps, baselineSettings, plan.prepare ? `${c.leaf}/${c.position}` : ""]);
  let uninterrupted = baselines.get(key);
  if (!uninterrupted) {
    uninterrupted = baseline({
      steps: baselineSteps,
      settings: baselineSettings,
      ...(intent.tools && { tools: intent.tools }),
      prepare: (rig) => plan.prepare?.(rig),
      accept: async (rig, lane) => {
        await intent.history(rig, lane);
        return intent.start(rig, lane);
      },
      drive: (lane, operationId) => intent.finish(lane, operationId),
    });
    baselines.set(key, uninterrupted);
  }
  const reference = await uninterrupted;
  expect(reference.violations).toEqual([]);
  expect(record).toMatchObject({ operationId: crashed.operationId, kind: reference.record.kind, status: reference.record.status });
  const steered = recoveredShape(crashed, plan, c.intent).filter((entry) => entry.text !== steer && entry.text !== STEERED);
  expect(steered).toEqual(reference.shape);
  expect(crashed.violations).toEqual([]);
}

/**
 * The recovered transcript as an uninterrupted run would have it, after checking and taking out
 * exactly what the documented recovery adds: the synthetic unknown-outcome response (reserved
 * ids, reference §4.6) or a `replay: "never"` call's interruption result (§4.8; none here: the
 * engine's tools are safe, the hosted driver checks never-tools).
 */
function recoveredShape(crashed: Crashed, plan: CellPlan, intent: IntentName) {
  if (plan.recovery !== "unknown-outcome") return crashed.shape;
  const parked = crashed.parked;
  if (parked?.at !== "assistant.effect_pending") throw new Error(`${intent}: not parked at assistant.effect_pending`);
  const synthetic = crashed.transcript.find((entry) => entry.id === parked.responseEntryId);
  expect(synthetic?.type === "message" && synthetic.message.role === "assistant" && synthetic.message).toMatchObject({ stopReason: "error", errorMessage: UNKNOWN_OUTCOME_MESSAGE });
  return shapeOf(crashed.transcript.filter((entry) => entry !== synthetic));
}
