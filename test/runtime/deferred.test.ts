import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { Entry } from "../../schema/entries.ts";
import { checkInvariants } from "./invariants.ts";
import { crashAt, leafOf, never, settledRecord, until, type CrashScenario } from "./crash-rig.ts";
import { foldAndCapture, openWatched } from "./watch-fold.ts";
import { manualClock, ofType, unwrap, withDriveRig } from "./drive-helpers.ts";
import { leftoverOperationValues, SCRIPT, types } from "./helpers.ts";
import { withCompactionRig } from "./compaction-helpers.ts";
import { testTools } from "./tool-helpers.ts";

// Deferred (provider-async) responses in the engine (reference §3.11, §3.4 deferred edges, §4.5,
// §4.6): the scripted `{ deferred: { ready } }` step answers with a handle; the run suspends; a
// pass with a poll permit fetches it (the handle's ready step) and settles it through the same
// classification.

const later = (ready: ScriptStep, pollAfterMs?: number): ScriptStep => ({ deferred: { ...(pollAfterMs !== undefined && { pollAfterMs }), ready } });

async function accepted(lane: AgentLane, prompt = "go"): Promise<string> {
  return unwrap(await lane.accept({ kind: "prompt", prompt })).operationId;
}

const assistantStops = (entries: readonly Entry[]): string[] =>
  entries.flatMap((entry) => (entry.type === "message" && entry.message.role === "assistant" ? [entry.message.stopReason] : []));

describe("deferred runs", () => {
  it("suspends on a deferred response, waits without a permit, and completes on one poll", async () => {
    const result = await withCompactionRig(
      async ({ lane, session, events, requests }) => {
        const operationId = await accepted(lane);
        const waiting = unwrap(await lane.drive({ operationId }));
        const suspended = lane.state.operation?.state;
        const snapshot = (await lane.watch()).snapshot.operation;
        const stillWaiting = unwrap(await lane.drive({ operationId }));
        const record = settledRecord(await lane.drive({ operationId, pollDeferred: true }));
        requests.length = 0;
        unwrap(await lane.prompt("next"));
        return {
          waiting,
          stillWaiting,
          suspended,
          snapshot,
          record,
          stops: assistantStops(lane.findEntries({ order: "oldestFirst" })),
          events: types(events).filter((type) => type.startsWith("run_") || type === "turn_start" || type === "turn_end"),
          suspend: ofType(events, "run_suspend")[0],
          nextContext: requests[0]?.context.messages.map((message) => message.role),
          leftovers: leftoverOperationValues(session, operationId),
          violations: checkInvariants(session),
        };
      },
      { model: SCRIPT, steps: [later({ text: "ready now" }), { text: "second" }] },
    );
    expect(result.waiting).toMatchObject({ kind: "waiting", reason: "deferred", deferred: { provider: "scripted", modelId: "script" } });
    expect(result.stillWaiting).toMatchObject({ kind: "waiting", reason: "deferred" });
    expect(result.suspended).toMatchObject({ at: "deferred.suspended", poll: 0 });
    expect(result.snapshot?.deferred).toMatchObject({ poll: 0, handle: { provider: "scripted" } });
    expect(result.record).toMatchObject({ kind: "run", status: "completed" });
    expect(result.stops).toEqual(["deferred", "stop", "stop"]);
    expect(result.events).toEqual(["run_start", "turn_start", "turn_end", "run_suspend", "run_resume", "turn_start", "turn_end", "run_end", "run_start", "turn_start", "turn_end", "run_end"]);
    expect(result.suspend).toMatchObject({ reason: "deferred", poll: 0 });
    // The deferred entry stays in history but never reaches the model again.
    expect(result.nextContext).toEqual(["user", "assistant", "user"]);
    expect(result.leftovers).toEqual([]);
    expect(result.violations).toEqual([]);
  });

  it("a poll that is still pending suspends again at the same poll number; the next permit completes it", async () => {
    const result = await withCompactionRig(
      async ({ lane, events }) => {
        const operationId = await accepted(lane);
        unwrap(await lane.drive({ operationId }));
        const again = unwrap(await lane.drive({ operationId, pollDeferred: true }));
        const at = lane.state.operation?.state;
        const record = settledRecord(await lane.drive({ operationId, pollDeferred: true }));
        return { again, at, record, polls: ofType(events, "run_suspend").map((event) => event.poll), turns: ofType(events, "turn_start").map((event) => event.turnId.split(":").slice(1).join(":")) };
      },
      { model: SCRIPT, steps: [later(later({ text: "finally" }))] },
    );
    expect(result.again).toMatchObject({ kind: "waiting", reason: "deferred" });
    expect(result.at).toMatchObject({ at: "deferred.suspended", poll: 1 });
    expect(result.polls).toEqual([0, 1]);
    expect(result.turns).toEqual(["", "poll:1", "poll:2"]);
    expect(result.record.status).toBe("completed");
  });

  it("a ready response with tool calls runs its tools, then the run continues", async () => {
    const result = await withCompactionRig(
      async ({ lane }) => {
        unwrap(await lane.setActiveTools(["probe"]));
        const operationId = await accepted(lane);
        unwrap(await lane.drive({ operationId }));
        const record = settledRecord(await lane.drive({ operationId, pollDeferred: true }));
        return { record, roles: lane.findEntries({ order: "oldestFirst" }).map((entry) => (entry.type === "message" ? entry.message.role : entry.type)) };
      },
      {
        model: SCRIPT,
        steps: [later({ toolCalls: [{ name: "probe", arguments: {} }] }), { text: "after the tool" }],
        tools: testTools({ probe: { run: async () => ({ content: [{ type: "text", text: "probed" }] }) } }),
      },
    );
    expect(result.record.status).toBe("completed");
    expect(result.roles).toEqual(["user", "assistant", "assistant", "toolResult", "assistant"]);
  });

  it("waits pollAfterMs before polling, even with a permit", async () => {
    const clock = manualClock();
    const result = await withDriveRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        const operationId = await accepted(lane);
        unwrap(await lane.drive({ operationId }));
        const early = unwrap(await lane.drive({ operationId, pollDeferred: true }));
        clock.advance(61_000);
        const record = settledRecord(await lane.drive({ operationId, pollDeferred: true }));
        return { early, record };
      },
      { steps: [later({ text: "slowly" }, 60_000)], clock },
    );
    expect(result.early).toMatchObject({ kind: "waiting", reason: "deferred" });
    expect(result.record.status).toBe("completed");
  });

  it("a handle past its expiry fails the run deferred_expired instead of polling", async () => {
    const clock = manualClock();
    const result = await withDriveRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        const operationId = await accepted(lane);
        unwrap(await lane.drive({ operationId }));
        clock.advance(120_000);
        return settledRecord(await lane.drive({ operationId, pollDeferred: true }));
      },
      { steps: [{ deferred: { expiresAfterMs: 60_000, ready: { text: "too late" } } }], clock },
    );
    expect(result).toMatchObject({ status: "failed", error: { code: "deferred_expired" } });
  });

  it("an abort while suspended asks the provider to cancel and ends the run aborted", async () => {
    const result = await withCompactionRig(
      async ({ lane, models, session }) => {
        const operationId = await accepted(lane);
        const waiting = unwrap(await lane.drive({ operationId }));
        unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await lane.drive({ operationId }));
        return { waiting, record, cancels: models.cancels, leftovers: leftoverOperationValues(session, operationId) };
      },
      { model: SCRIPT, steps: [later({ text: "never read" })] },
    );
    expect(result.record.status).toBe("aborted");
    expect(result.cancels).toEqual([result.waiting.kind === "waiting" && result.waiting.reason === "deferred" ? result.waiting.deferred.id : "?"]);
    expect(result.leftovers).toEqual([]);
  });

  it("an abort while polling settles the poll aborted, cancels, and ends the run aborted", async () => {
    const result = await withCompactionRig(
      async ({ lane, models }) => {
        const operationId = await accepted(lane);
        unwrap(await lane.drive({ operationId }));
        const polling = lane.drive({ operationId, pollDeferred: true });
        await until(() => leafOf(lane) === "deferred.effect_pending", "the poll");
        unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await polling);
        return { record, cancels: models.cancels.length, stops: assistantStops(lane.findEntries({ order: "oldestFirst" })) };
      },
      { model: SCRIPT, steps: [later({ text: "slow words arrive", chunkMs: 1_000 })] },
    );
    expect(result.record.status).toBe("aborted");
    expect(result.cancels).toBe(1);
    expect(result.stops).toEqual(["deferred", "aborted"]);
  });

  it("a watcher's fold across suspend and resume equals a fresh snapshot", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness }) => {
        const watched = await openWatched(lane);
        const operationId = await accepted(lane);
        unwrap(await lane.drive({ operationId }));
        const suspended = await foldAndCapture(harness, lane, watched);
        settledRecord(await lane.drive({ operationId, pollDeferred: true }));
        return { suspended, done: await foldAndCapture(harness, lane, watched) };
      },
      { model: SCRIPT, steps: [later({ text: "ready" })] },
    );
    expect(result.suspended.folded).toEqual(result.suspended.fresh);
    expect(result.suspended.fresh.operation?.deferred?.poll).toBe(0);
    expect(result.done.folded).toEqual(result.done.fresh);
  });
});

/** A crash scenario's first pass: suspended, then parked in its poll's stream (`deferred.effect_pending`) until the kill. */
const parkedPoll: Pick<CrashScenario, "accept" | "park"> = {
  accept: async (_rig, lane) => {
    const operationId = await accepted(lane);
    unwrap(await lane.drive({ operationId }));
    // The polling pass (crashAt's own pass joins it once it runs); the kill ends it.
    lane.drive({ operationId, pollDeferred: true }).catch(() => undefined);
    await until(() => leafOf(lane) === "deferred.effect_pending", "the poll");
    return operationId;
  },
  park: ({ harness }, lane) => {
    let parked = false;
    // Only the poll's stream parks (the first request's deferred answer streams too).
    harness.events.on("message_start", () => {
      if (leafOf(lane) !== "deferred.effect_pending") return;
      parked = true;
      return never();
    });
    return () => parked;
  },
};

describe("deferred runs across a kill", () => {
  it("deferred.suspended: restored suspended; no permit waits, a permit completes", async () => {
    const crashed = await crashAt({
      steps: [later({ text: "ready" })],
      park: (_rig, lane) => () => leafOf(lane) === "deferred.suspended",
      drive: async (lane, operationId) => {
        const waiting = await lane.drive({ operationId });
        if (!waiting.ok || waiting.value.kind !== "waiting") throw new Error("expected the run to wait without a permit");
        return lane.drive({ operationId, pollDeferred: true });
      },
    });
    expect(crashed.restored).toMatchObject({ at: "deferred.suspended", poll: 0 });
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.violations).toEqual([]);
  });

  it("deferred.effect_pending: the unknown poll is replaced under fresh ids at the same poll number", async () => {
    let parkedResponse = "";
    const crashed = await crashAt({
      steps: [later({ text: "the ready answer" })],
      ...parkedPoll,
      whileParked: async (_rig, lane) => {
        const state = lane.state.operation?.state;
        parkedResponse = state?.at === "deferred.effect_pending" ? state.responseEntryId : "";
      },
      drive: (lane, operationId) => lane.drive({ operationId, pollDeferred: true }),
    });
    expect(crashed.parked).toMatchObject({ at: "deferred.effect_pending", poll: 1 });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    const answer = crashed.transcript.at(-1);
    expect(answer?.type === "message" && answer.message.role === "assistant" && answer.id).not.toBe(parkedResponse);
    expect(crashed.transcript.some((entry) => entry.id === parkedResponse)).toBe(false);
    expect(crashed.violations).toEqual([]);
  });

  it("deferred.effect_pending with a handle past its expiry: the run fails deferred_expired, the poll is not repeated", async () => {
    const crashed = await crashAt({
      steps: [{ deferred: { expiresAfterMs: 60_000, ready: { text: "too late" } } }],
      ...parkedPoll,
      // The fresh object restores the poll after the handle expired.
      clock: () => Date.now() + 120_000,
      drive: (lane, operationId) => lane.drive({ operationId, pollDeferred: true }),
    });
    expect(crashed.restored).toMatchObject({ at: "deferred.effect_pending", poll: 1 });
    expect(settledRecord(crashed.driven)).toMatchObject({ status: "failed", error: { code: "deferred_expired" } });
    expect(ofType(crashed.events, "run_resume")).toEqual([]);
    expect(ofType(crashed.events, "message_start")).toEqual([]);
    expect(assistantStops(crashed.transcript)).toEqual(["deferred"]);
    expect(crashed.violations).toEqual([]);
  });
});
