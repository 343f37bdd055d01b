import { expect } from "vitest";
import type { HookName } from "../../../harness/execution/hooks.ts";
import type { AgentLane } from "../../../harness/runtime/lane.ts";
import type { OperationState } from "../../../harness/runtime/types.ts";
import { value } from "../../../harness/session/addresses.ts";
import { clientToolResult, pendingAssistantFrames, pendingToolOutput } from "../../../harness/session/builtin-addresses.ts";
import type { ScriptStep } from "../../../models/scripted/steps.ts";
import type { HarnessEventType } from "../../../schema/lane.ts";
import type { AgentMessage } from "../../../schema/messages.ts";
import type { HarnessSettingsPatch } from "../../../schema/settings-patch.ts";
import { leafOf, never, stepsTaken, type Attached } from "../crash-rig.ts";
import { engineIntent, postClientAnswer, type EngineIntent } from "./intents.ts";

// The cells of the crash matrix the engine driver (driver.ts) runs, by `leaf/position`: for each,
// how the operation is parked at exactly that point (a hook, the delivery of the event its commit
// bound, or a durable state), what the script needs there (a step lost, failed or streamed), and
// what the parked state must be. The intents (intents.ts) supply the rest.

export interface Park {
  rig: Attached;
  lane: AgentLane;
  intent: EngineIntent;
  /** True once the history ran: only the operation under test parks. */
  armed: () => boolean;
}

/** What a cell (leaf × position) does to an intent's run to kill it at that point. */
export interface CellPlan {
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
export const PLANS: Record<string, CellPlan> = {
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
