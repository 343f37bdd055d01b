import { describe, expect, it } from "vitest";
import { HarnessFault } from "../../harness/execution/errors.ts";
import { InvalidLane } from "../../harness/runtime/errors.ts";
import { AgentHarness } from "../../harness/runtime/harness.ts";
import { RestoreCorruption } from "../../harness/runtime/restore.ts";
import type { DurableLaneState } from "../../harness/runtime/types.ts";
import { branchTip, laneConfig, laneState } from "../../harness/session/builtin-addresses.ts";
import { UnknownTarget } from "../../harness/session/errors.ts";
import type { Session } from "../../harness/session/session.ts";
import { createModelRegistry } from "../../models/registry.ts";
import type { LaneConfiguration } from "../../schema/lane.ts";
import { ECHO, SCRIPT, withRig } from "./helpers.ts";
import { commitCounter, describeEntry, expectOk, ofType, queued, settledRecord, transcript, user, withObject } from "./queue-helpers.ts";

const SEED: LaneConfiguration = { model: ECHO, thinkingLevel: "off", activeToolNames: [] };
const IDLE: DurableLaneState = { lastOperationId: null, inbox: [] };

/** The three durable values of a lane with the seq each was last written at. */
function laneValues(session: Session, name: string) {
  const pick = <T>(stored: { value: T; seq: number } | undefined) => (stored ? { value: stored.value, seq: stored.seq } : undefined);
  return {
    tip: pick(session.getValue(branchTip(name))),
    config: pick(session.getValue(laneConfig<LaneConfiguration>(name))),
    state: pick(session.getValue(laneState<DurableLaneState>(name))),
  };
}

describe("harness.lane(): the four acquisition cases (§2.4)", () => {
  it("a fresh harness has no lanes, and missing main is legal", async () => {
    const lanes = await withRig(async ({ harness }) => harness.lanes());
    expect(lanes).toEqual([]);
  });

  it("no tip and no lane values: one commit of a null tip, the seed configuration and an idle state; lane_created{at:null}", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const commits = commitCounter(session);
      const lane = await harness.lane("main");
      return { commits: commits.count, values: laneValues(session, "main"), events: [...events], lanes: harness.lanes(), tip: lane.getTipId(), model: lane.getModel() };
    });
    expect(result.commits).toBe(1);
    expect(result.values.tip?.value).toBeNull();
    expect(result.values.config?.value).toEqual(SEED);
    expect(result.values.state?.value).toEqual(IDLE);
    expect(result.events).toEqual([{ type: "lane_created", lane: "main", at: null }]);
    expect(result.lanes).toEqual([{ name: "main", tipId: null, operation: null }]);
    expect(result.tip).toBeNull();
    expect(result.model).toEqual(ECHO);
  });

  it("a lane created with its thinking level and active tools takes them in its one creation commit; a reconfiguration is one commit too", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const commits = commitCounter(session);
      await harness.lane("main", { model: SCRIPT, thinkingLevel: "high", activeToolNames: ["current_time", "current_time"] });
      const created = { commits: commits.count, config: laneValues(session, "main").config?.value };
      commits.reset();
      events.length = 0;
      const lane = harness.getLane("main");
      if (!lane) throw new Error("no lane");
      expectOk(await lane.reconfigure({ model: ECHO, thinkingLevel: "low", activeToolNames: [] }));
      return { created, reconfigured: { commits: commits.count, config: laneValues(session, "main").config?.value }, events: events.map((event) => event.type) };
    });
    expect(result.created).toEqual({ commits: 1, config: { model: SCRIPT, thinkingLevel: "high", activeToolNames: ["current_time"] } });
    expect(result.reconfigured).toEqual({ commits: 1, config: { model: ECHO, thinkingLevel: "low", activeToolNames: [] } });
    expect(result.events).toEqual(["config_update", "config_update", "config_update"]);
  });

  it("createAt anchors a new lane at an existing entry; the source branch is untouched", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const data = await session.createBranch("data", null);
      const first = await data.appendMessage(user("first"));
      const second = await data.appendMessage(user("second"));
      const lane = await harness.lane("side", { createAt: first });
      return { first, second, tip: lane.getTipId(), side: transcript(lane), dataTip: data.getTipId(), events: [...events] };
    });
    expect(result.tip).toBe(result.first);
    expect(result.side).toEqual(["user:first"]);
    expect(result.dataTip).toBe(result.second);
    expect(result.events).toEqual([{ type: "lane_created", lane: "side", at: result.first }]);
  });

  it("an unknown createAt target rejects with UnknownTarget and writes nothing", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const commits = commitCounter(session);
      const missing = session.idGenerator.next();
      const error = await harness.lane("x", { createAt: missing }).catch((e: unknown) => e);
      const after = { commits: commits.count, values: laneValues(session, "x"), lanes: harness.lanes(), events: [...events], faulted: harness.faulted };
      const retried = await harness.lane("x");
      return { missing, error, after, retriedTip: retried.getTipId() };
    });
    expect(result.error).toBeInstanceOf(UnknownTarget);
    expect(result.error).toMatchObject({ targetId: result.missing });
    expect(result.after).toEqual({ commits: 0, values: { tip: undefined, config: undefined, state: undefined }, lanes: [], events: [], faulted: false });
    expect(result.retriedTip).toBeNull();
  });

  it("an empty name or one containing NUL throws InvalidLane", async () => {
    const result = await withRig(async ({ harness }) => ({
      empty: await harness.lane("").catch((e: unknown) => e),
      nul: await harness.lane("a\u0000b").catch((e: unknown) => e),
      lanes: harness.lanes(),
      faulted: harness.faulted,
    }));
    expect(result.empty).toBeInstanceOf(InvalidLane);
    expect(result.nul).toBeInstanceOf(InvalidLane);
    expect(result.lanes).toEqual([]);
    expect(result.faulted).toBe(false);
  });

  it("a data-only branch gets config and idle state at its existing tip (createAt ignored); lane_created{at: tip}", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const branch = await session.createBranch("feature", null);
      const root = await branch.appendMessage(user("root"));
      const tip = await branch.appendMessage(user("tip"));
      const before = laneValues(session, "feature");
      const commits = commitCounter(session);
      const lane = await harness.lane("feature", { createAt: root });
      return { root, tip, before, after: laneValues(session, "feature"), commits: commits.count, laneTip: lane.getTipId(), entries: transcript(lane), events: [...events] };
    });
    expect(result.commits).toBe(1);
    expect(result.laneTip).toBe(result.tip);
    // The tip value is not rewritten at all: same value, same seq.
    expect(result.after.tip).toEqual(result.before.tip);
    expect(result.after.config?.value).toEqual(SEED);
    expect(result.after.state?.value).toEqual(IDLE);
    expect(result.entries).toEqual(["user:root", "user:tip"]);
    expect(result.events).toEqual([{ type: "lane_created", lane: "feature", at: result.tip }]);
  });

  it("a complete lane returns the same published object, commits nothing, emits nothing and ignores createAt", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      expectOk(await lane.prompt("hello"));
      const other = await session.createBranch("other", null);
      const elsewhere = await other.appendMessage(user("elsewhere"));
      const before = laneValues(session, "main");
      const eventCount = events.length;
      const commits = commitCounter(session);
      const again = await harness.lane("main", { createAt: elsewhere });
      const nullAt = await harness.lane("main", { createAt: null });
      return {
        same: again === lane && nullAt === lane,
        commits: commits.count,
        before,
        after: laneValues(session, "main"),
        newEvents: events.slice(eventCount),
        entries: transcript(again),
      };
    });
    expect(result.same).toBe(true);
    expect(result.commits).toBe(0);
    expect(result.after).toEqual(result.before);
    expect(result.newEvents).toEqual([]);
    expect(result.entries).toEqual(["user:hello", "assistant:hello"]);
  });

  it("a complete lane this harness has not published yet is restored from storage without a commit or event", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const models = createModelRegistry({ scripted: true });
      // A different seed: it initializes missing lanes only and never overrides an existing one.
      const { harness: second } = await AgentHarness.create({ session, models, seed: { model: SCRIPT, thinkingLevel: "high" } });
      const secondEvents: string[] = [];
      second.events.on("*", (event) => void secondEvents.push(event.type));
      const lane = await harness.lane("main");
      expectOk(await lane.nextRun("later"));
      const before = laneValues(session, "main");
      const commits = commitCounter(session);
      const restored = await second.lane("main");
      return {
        distinct: restored !== lane,
        commits: commits.count,
        same: laneValues(session, "main"),
        before,
        tip: restored.getTipId(),
        configuration: restored.inspectExecution().configuration,
        queue: queued(restored),
        secondEvents,
        firstCreated: ofType(events, "lane_created").length,
      };
    });
    expect(result.distinct).toBe(true);
    expect(result.commits).toBe(0);
    expect(result.same).toEqual(result.before);
    expect(result.tip).toBeNull();
    expect(result.queue).toEqual(["nextRun:later"]);
    expect(result.configuration).toEqual(SEED);
    expect(result.secondEvents).toEqual([]);
    expect(result.firstCreated).toBe(1);
  });

  const partial: [string, (session: Session) => Promise<unknown>][] = [
    ["only a lane config", (session) => session.setValue(laneConfig<LaneConfiguration>("x"), SEED)],
    ["only a lane state", (session) => session.setValue(laneState<DurableLaneState>("x"), IDLE)],
    [
      "a tip and a lane state without config",
      async (session) => {
        await session.createBranch("x", null);
        await session.setValue(laneState<DurableLaneState>("x"), IDLE);
      },
    ],
  ];
  it.each(partial)("a partial lane (%s) is corruption: lane() rejects and the harness faults", async (_label, corrupt) => {
    const result = await withRig(async ({ session, harness, events }) => {
      const main = await harness.lane("main");
      await corrupt(session);
      const commits = commitCounter(session);
      const error = await harness.lane("x").catch((e: unknown) => e);
      const later = await harness.lane("main").catch((e: unknown) => e);
      const steer = await main.steer("after the fault").catch((e: unknown) => e);
      return { error, later, steer, faulted: harness.faulted, commits: commits.count, faults: ofType(events, "fault").length, lanes: harness.lanes().map((l) => l.name) };
    });
    expect(result.error).toBeInstanceOf(HarnessFault);
    expect(result.faulted).toBe(true);
    expect(result.later).toBeInstanceOf(HarnessFault);
    // A lane command after the fault fails too (through its Result channel, or by throwing the fault).
    const refused = result.steer instanceof HarnessFault || (typeof result.steer === "object" && result.steer !== null && "ok" in result.steer && result.steer.ok === false);
    expect(refused).toBe(true);
    expect(result.commits).toBe(0);
    expect(result.faults).toBe(1);
    expect(result.lanes).toEqual(["main"]);
  });

  const contradictory: [string, (session: Session) => DurableLaneState][] = [
    ["(the earlier form) a current operation that is not stored", (session) => ({ ...IDLE, currentOperationId: session.idGenerator.next() })],
    ["a queued item without its payload", (session) => ({ ...IDLE, inbox: [{ entryId: session.idGenerator.next(), kind: "steer" }] })],
  ];
  it.each(contradictory)("a complete but contradictory lane (%s) is corruption: lane() rejects and the harness faults", async (_label, state) => {
    const result = await withRig(async ({ session, harness, events }) => {
      await session.createBranch("x", null);
      await session.setValue(laneConfig<LaneConfiguration>("x"), SEED);
      await session.setValue(laneState<DurableLaneState>("x"), state(session));
      const error = await harness.lane("x").catch((e: unknown) => e);
      const later = await harness.lane("main").catch((e: unknown) => e);
      return { error, later, faulted: harness.faulted, faults: ofType(events, "fault").length, lanes: harness.lanes() };
    });
    expect(result.error).toBeInstanceOf(HarnessFault);
    expect(result.faulted).toBe(true);
    expect(result.later).toBeInstanceOf(HarnessFault);
    expect(result.faults).toBe(1);
    expect(result.lanes).toEqual([]);
  });

  it("concurrent acquisitions of one name return the same object after one commit and one lane_created", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const commits = commitCounter(session);
      const [a, b, c] = await Promise.all([harness.lane("main"), harness.lane("main"), harness.lane("main", { createAt: null })]);
      return { same: a === b && b === c, commits: commits.count, created: ofType(events, "lane_created").length, lanes: harness.lanes().length };
    });
    expect(result).toEqual({ same: true, commits: 1, created: 1, lanes: 1 });
  });
});

describe("AgentHarness.create (attachment)", () => {
  it("restores complete lanes only, with their queues, and lists open operations without driving them", async () => {
    const result = await withObject(async (first, reopen) => {
      const main = await first.harness.lane("main");
      const done = settledRecord(await main.prompt("hi"));
      expectOk(await main.nextRun("later"));
      const busy = await first.harness.lane("busy");
      const busyOp = expectOk(await busy.accept({ kind: "prompt", prompt: "waiting" }));
      const aborting = await first.harness.lane("aborting");
      const abortOp = expectOk(await aborting.accept({ kind: "prompt", prompt: "doomed" }));
      expectOk(await aborting.requestAbort(abortOp.operationId));
      const data = await first.session.createBranch("data", null);
      const dataTip = await data.appendMessage(user("data only"));
      const mainTip = main.getTipId();
      await first.harness.close();

      const second = await reopen();
      const created = {
        lanes: second.harness.lanes().sort((a, b) => a.name.localeCompare(b.name)),
        events: [...second.events],
      };
      const commits = commitCounter(second.session);
      const restoredMain = await second.harness.lane("main");
      const restoredBusy = await second.harness.lane("busy");
      const mainAcquisition = { commits: commits.count, events: [...second.events] };
      const busyAt = restoredBusy.inspectExecution().current?.at;
      const dataLane = await second.harness.lane("data");
      const busyRecord = settledRecord(await restoredBusy.drive({ operationId: busyOp.operationId, waitForRetry: true }));
      return {
        done,
        mainTip,
        dataTip,
        busyOp,
        abortOp,
        created,
        open: [...second.open].sort((a, b) => a.lane.localeCompare(b.lane)),
        mainAcquisition,
        mainState: { tip: restoredMain.getTipId(), queue: queued(restoredMain), last: restoredMain.inspectExecution().lastOperationId },
        busyAt,
        dataTipAfter: dataLane.getTipId(),
        dataCreated: ofType(second.events, "lane_created"),
        busyRecord,
        busyTranscript: restoredBusy.findEntries({ order: "oldestFirst" }).map(describeEntry),
      };
    });
    expect(result.created.lanes).toEqual([
      { name: "aborting", tipId: expect.any(String), operation: { id: result.abortOp.operationId, kind: "run", startedAt: result.abortOp.startedAt, status: "aborting" } },
      { name: "busy", tipId: expect.any(String), operation: { id: result.busyOp.operationId, kind: "run", startedAt: result.busyOp.startedAt, status: "open" } },
      { name: "main", tipId: result.mainTip, operation: null },
    ]);
    expect(result.created.events).toEqual([]);
    expect(result.open).toEqual([
      { lane: "aborting", operationId: result.abortOp.operationId, kind: "run", startedAt: result.abortOp.startedAt, aborting: true },
      { lane: "busy", operationId: result.busyOp.operationId, kind: "run", startedAt: result.busyOp.startedAt },
    ]);
    expect(result.mainAcquisition).toEqual({ commits: 0, events: [] });
    expect(result.mainState).toEqual({ tip: result.mainTip, queue: ["nextRun:later"], last: result.done.operationId });
    expect(result.busyAt).toBe("starting");
    expect(result.dataTipAfter).toBe(result.dataTip);
    expect(result.dataCreated).toEqual([{ type: "lane_created", lane: "data", at: result.dataTip }]);
    expect(result.busyRecord.status).toBe("completed");
    expect(result.busyTranscript).toEqual(["user:waiting", "assistant:waiting"]);
  });

  it("refuses to attach to a session holding a partly stored lane", async () => {
    const error = await withRig(async ({ session }) => {
      await session.setValue(laneConfig<LaneConfiguration>("broken"), SEED);
      return AgentHarness.create({ session, models: createModelRegistry({ scripted: true }), seed: { model: ECHO } }).catch((e: unknown) => e);
    });
    expect(error).toBeInstanceOf(RestoreCorruption);
  });
});
