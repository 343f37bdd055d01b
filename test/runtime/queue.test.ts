import { describe, expect, it } from "vitest";
import { readLaneState, type ReadLaneState } from "../../harness/runtime/lane-state-form.ts";
import { laneState, pendingEntry } from "../../harness/session/builtin-addresses.ts";
import { types, withRig } from "./helpers.ts";
import {
  IMAGE,
  branchEntries,
  chained,
  commitCounter,
  expectErr,
  expectOk,
  ofType,
  pendingAssistant,
  queueOf,
  queued,
  settledAssistant,
  settledRecord,
  transcript,
  user,
} from "./queue-helpers.ts";

describe("enqueue: steer / followUp / nextRun (§3.7)", () => {
  it("always admits: idle, during a run, after an abort request and after the aborted terminal; each emits the whole queue", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const snapshots: string[][] = [];
      const enqueue = async (kind: "steer" | "followUp" | "nextRun", text: string) => {
        const mark = events.length;
        const commits = commitCounter(session);
        const { entryId } = expectOk(await lane[kind](text));
        const updates = ofType(events.slice(mark), "queue_update");
        snapshots.push(queueOf(updates[0]));
        if (updates.length !== 1 || commits.count !== 1) throw new Error(`${kind}: ${updates.length} updates, ${commits.count} commits`);
        return entryId;
      };
      await enqueue("steer", "idle steer");
      const idleQueue = queued(lane);
      const run = expectOk(await lane.accept({ kind: "prompt", prompt: "run" }));
      await enqueue("followUp", "busy follow");
      await enqueue("nextRun", "busy next");
      const abort = expectOk(await lane.requestAbort(run.operationId));
      await enqueue("steer", "aborting steer");
      const record = settledRecord(await lane.drive({ operationId: run.operationId }));
      await enqueue("followUp", "after follow");
      const durable = readLaneState(session.getValue(laneState<ReadLaneState>("main"))?.value ?? {});
      return { idleQueue, snapshots, abort, record, queue: queued(lane), durable, entries: transcript(lane) };
    });
    expect(result.idleQueue).toEqual(["steer:idle steer"]);
    expect(result.snapshots).toEqual([
      ["steer:idle steer"],
      ["followUp:busy follow"],
      ["followUp:busy follow", "nextRun:busy next"],
      ["nextRun:busy next", "steer:aborting steer"],
      ["nextRun:busy next", "steer:aborting steer", "followUp:after follow"],
    ]);
    // The abort request drained the followUp; the steer queued after it survived the terminal.
    expect(result.abort.followUp.map((m) => (m.role === "user" ? m.content : ""))).toEqual(["busy follow"]);
    expect(result.record.status).toBe("aborted");
    expect(result.queue).toEqual(["nextRun:busy next", "steer:aborting steer", "followUp:after follow"]);
    expect(result.durable?.inbox.map((item) => item.kind)).toEqual(["nextRun", "steer", "followUp"]);
    expect(result.entries).toEqual(["user:idle steer", "user:run"]);
  });

  it("rejects empty text, pending assistants and images with non-user messages with InvalidMessage, writing nothing", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const mark = events.length;
      const commits = commitCounter(session);
      const rejected = {
        steer: expectErr(await lane.steer("")),
        followUp: expectErr(await lane.followUp("", [])),
        nextRun: expectErr(await lane.nextRun("")),
        pending: expectErr(await lane.steer(pendingAssistant())),
        images: expectErr(await lane.followUp(settledAssistant("a reply"), [IMAGE])),
      };
      const rejectedCommits = commits.count;
      const rejectedEvents = events.length - mark;
      const imageOnly = expectOk(await lane.steer("", [IMAGE]));
      const assistant = expectOk(await lane.nextRun(settledAssistant("from a message")));
      return { rejected, rejectedCommits, rejectedEvents, imageOnly, assistant, queue: lane.inspectExecution().queues };
    });
    expect(result.rejected).toEqual({
      steer: { code: "InvalidMessage", lane: "main", reason: "empty" },
      followUp: { code: "InvalidMessage", lane: "main", reason: "empty" },
      nextRun: { code: "InvalidMessage", lane: "main", reason: "empty" },
      pending: { code: "InvalidMessage", lane: "main", reason: "pending_assistant" },
      images: { code: "InvalidMessage", lane: "main", reason: "images_with_non_user" },
    });
    expect(result.rejectedCommits).toBe(0);
    expect(result.rejectedEvents).toBe(0);
    expect(result.queue).toEqual([
      { entryId: result.imageOnly.entryId, kind: "steer", type: "message", message: { role: "user", content: [IMAGE], timestamp: expect.any(Number) } },
      { entryId: result.assistant.entryId, kind: "nextRun", type: "message", message: settledAssistant("from a message") },
    ]);
  });
});

describe("cancelQueued triage", () => {
  it("cancelled removes the item and its payload and emits the remaining queue; a second cancel is not_found", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const steer = expectOk(await lane.steer("a")).entryId;
      const follow = expectOk(await lane.followUp("b")).entryId;
      const mark = events.length;
      const first = expectOk(await lane.cancelQueued(steer));
      const update = ofType(events.slice(mark), "queue_update");
      const mark2 = events.length;
      const commits = commitCounter(session);
      const again = expectOk(await lane.cancelQueued(steer));
      const unknown = expectOk(await lane.cancelQueued(session.idGenerator.next()));
      return {
        first,
        again,
        unknown,
        update: update.map(queueOf),
        laterEvents: events.length - mark2,
        laterCommits: commits.count,
        payloads: [session.getValue(pendingEntry(steer)) !== undefined, session.getValue(pendingEntry(follow)) !== undefined],
        durable: readLaneState(session.getValue(laneState<ReadLaneState>("main"))?.value ?? {}).inbox,
        follow,
      };
    });
    expect(result.first).toEqual({ kind: "cancelled" });
    expect(result.update).toEqual([["followUp:b"]]);
    expect(result.payloads).toEqual([false, true]);
    expect(result.durable).toEqual([{ entryId: result.follow, kind: "followUp" }]);
    expect(result.again).toEqual({ kind: "not_found" });
    expect(result.unknown).toEqual({ kind: "not_found" });
    expect(result.laterEvents).toBe(0);
    expect(result.laterCommits).toBe(0);
  });

  it("already_consumed once the item was placed; a cancelled write is never placed", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      const next = expectOk(await lane.nextRun("take me")).entryId;
      const run = expectOk(await lane.accept({ kind: "prompt", prompt: "go" }));
      const consumed = expectOk(await lane.cancelQueued(next));
      const write = expectOk(await lane.appendCustomEntry("note", { drop: true })).entryId;
      const cancelledWrite = expectOk(await lane.cancelQueued(write));
      const record = settledRecord(await lane.drive({ operationId: run.operationId, waitForRetry: true }));
      return { consumed, cancelledWrite, record, entries: transcript(lane), queue: queued(lane) };
    });
    expect(result.consumed).toEqual({ kind: "already_consumed" });
    expect(result.cancelledWrite).toEqual({ kind: "cancelled" });
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:take me", "user:go", "assistant:go"]);
    expect(result.queue).toEqual([]);
  });
});

describe("cancelQueued after an abort drain", () => {
  it("a steer drained by an abort request was returned to the caller, never placed: not_found", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      const run = expectOk(await lane.accept({ kind: "prompt", prompt: "go" }));
      const steer = expectOk(await lane.steer("drained")).entryId;
      const abort = expectOk(await lane.requestAbort(run.operationId));
      const cancel = expectOk(await lane.cancelQueued(steer));
      return { abort: abort.steer.length, cancel };
    });
    expect(result.abort).toBe(1);
    expect(result.cancel).toEqual({ kind: "not_found" });
  });
});

describe("operation-aware append (§2.3)", () => {
  it("idle: places the entry at the tip in one commit and moves the tip", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      expectOk(await lane.prompt("hello"));
      const before = lane.getTipId();
      const mark = events.length;
      const commits = commitCounter(session);
      const custom = expectOk(await lane.appendCustomEntry("note", { a: 1 }));
      const message = expectOk(await lane.appendMessage(user("typed")));
      const entries = branchEntries(lane);
      return { before, custom, message, commits: commits.count, tip: lane.getTipId(), entries: transcript(lane), chain: chained(entries), events: events.slice(mark), stored: session.getEntry(custom.entryId) };
    });
    expect(result.custom.placed).toBe(true);
    expect(result.message.placed).toBe(true);
    expect(result.commits).toBe(2);
    expect(result.tip).toBe(result.message.entryId);
    expect(result.stored).toMatchObject({ id: result.custom.entryId, parentId: result.before, type: "custom", customType: "note", data: { a: 1 } });
    expect(result.entries).toEqual(["user:hello", "assistant:hello", "custom:note", "user:typed"]);
    expect(result.chain).toBe(true);
    expect(types(result.events)).toEqual(["entry_added", "message_start", "message_end", "entry_added", "stats"]);
  });

  it("idle with queued writes: places them first, in inbox order, then the new entry, in one commit", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const hold = expectOk(await lane.accept({ kind: "prompt", prompt: "hold" }));
      const w1 = expectOk(await lane.appendCustomEntry("first", null)).entryId;
      expectOk(await lane.nextRun("stays"));
      const w2 = expectOk(await lane.appendMessage(user("second"))).entryId;
      expectOk(await lane.requestAbort(hold.operationId));
      settledRecord(await lane.drive({ operationId: hold.operationId }));
      const mark = events.length;
      const commits = commitCounter(session);
      const appended = expectOk(await lane.appendCustomEntry("third", { n: 3 }));
      const entries = branchEntries(lane);
      return {
        w1,
        w2,
        appended,
        commits: commits.count,
        entries: transcript(lane),
        ids: entries.slice(1).map((entry) => entry.id),
        chain: chained(entries),
        tip: lane.getTipId(),
        queue: queued(lane),
        payloads: [w1, w2].filter((id) => session.getValue(pendingEntry(id)) !== undefined),
        events: events.slice(mark),
      };
    });
    expect(result.appended.placed).toBe(true);
    expect(result.commits).toBe(1);
    expect(result.entries).toEqual(["user:hold", "custom:first", "user:second", "custom:third"]);
    expect(result.ids).toEqual([result.w1, result.w2, result.appended.entryId]);
    expect(result.chain).toBe(true);
    expect(result.tip).toBe(result.appended.entryId);
    expect(result.queue).toEqual(["nextRun:stays"]);
    expect(result.payloads).toEqual([]);
    expect(types(result.events)).toEqual(["entry_added", "message_start", "message_end", "entry_added", "entry_added", "stats", "queue_update"]);
    expect(queueOf(ofType(result.events, "queue_update")[0])).toEqual(["nextRun:stays"]);
  });

  it("busy: reserves the id and queues a write (tree unchanged); the next run boundary places it", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const run = expectOk(await lane.accept({ kind: "prompt", prompt: "hold" }));
      const tip = lane.getTipId();
      const mark = events.length;
      const note = expectOk(await lane.appendCustomEntry("note", { k: "v" }));
      const typed = expectOk(await lane.appendMessage(user("appended while busy")));
      const busy = {
        tip: lane.getTipId(),
        stored: session.getEntry(note.entryId),
        pending: session.getValue(pendingEntry(note.entryId))?.value,
        events: types(events.slice(mark)),
        update: queueOf(ofType(events.slice(mark), "queue_update").at(-1)),
        queues: lane.inspectExecution().queues,
      };
      const record = settledRecord(await lane.drive({ operationId: run.operationId, waitForRetry: true }));
      return { tip, note, typed, busy, record, entries: transcript(lane), queue: queued(lane) };
    });
    expect(result.note.placed).toBe(false);
    expect(result.typed.placed).toBe(false);
    expect(result.busy.tip).toBe(result.tip);
    expect(result.busy.stored).toBeUndefined();
    expect(result.busy.pending).toEqual({ type: "custom", customType: "note", payload: { k: "v" } });
    expect(result.busy.events).toEqual(["queue_update", "queue_update"]);
    expect(result.busy.update).toEqual(["write:note", "write:appended while busy"]);
    expect(result.busy.queues[0]).toEqual({ entryId: result.note.entryId, kind: "write", type: "custom", customType: "note", data: { k: "v" } });
    // Placed at the first boundary, before the assistant turn: echo answers the appended message.
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:hold", "custom:note", "user:appended while busy", "assistant:appended while busy"]);
    expect(result.queue).toEqual([]);
  });

  it("busy: a write queued during a run that ends without a boundary is placed by the next acceptance", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      const run = expectOk(await lane.accept({ kind: "prompt", prompt: "hold" }));
      expectOk(await lane.appendCustomEntry("note", null));
      expectOk(await lane.requestAbort(run.operationId));
      settledRecord(await lane.drive({ operationId: run.operationId }));
      const afterAbort = transcript(lane);
      expectOk(await lane.accept({ kind: "prompt", prompt: "next" }));
      return { afterAbort, entries: transcript(lane), queue: queued(lane) };
    });
    expect(result.afterAbort).toEqual(["user:hold"]);
    expect(result.entries).toEqual(["user:hold", "custom:note", "user:next"]);
    expect(result.queue).toEqual([]);
  });
});
