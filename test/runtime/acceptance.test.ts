import { readOperation } from "../../harness/runtime/operation-codec.ts";
import { describe, expect, it } from "vitest";
import { readLaneState, type ReadLaneState } from "../../harness/runtime/lane-state-form.ts";
import { laneState, pendingEntry } from "../../harness/session/builtin-addresses.ts";
import { types, withRig } from "./helpers.ts";
import {
  acceptAndDrive,
  branchEntries,
  chained,
  commitCounter,
  describeEntry,
  expectErr,
  expectOk,
  ofType,
  queueOf,
  queued,
  queueMixed,
  settledRecord,
  transcript,
} from "./queue-helpers.ts";

const MIX = ["custom:note", "user:next-1", "user:steer-1", "user:follow-1", "user:written", "user:steer-2", "user:follow-2", "user:next-2"];

describe("run acceptance: inbox capture (§3.1, §3.7)", () => {
  it("places every eligible item in global inbox order, then the prompt, in one commit with ordered events", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const { ids } = await queueMixed(lane);
      const sourceTip = lane.getTipId();
      const mark = events.length;
      const commits = commitCounter(session);
      const admission = expectOk(await lane.accept({ kind: "prompt", prompt: "go" }));
      const entries = branchEntries(lane);
      const start = entries.findIndex((entry) => entry.id === sourceTip) + 1;
      const placed = entries.slice(start);
      const meta = readOperation(session, admission.operationId)?.meta;
      const state = readOperation(session, admission.operationId)?.state;
      return {
        ids,
        admission,
        commits: commits.count,
        placed: placed.map(describeEntry),
        placedIds: placed.map((entry) => entry.id),
        chain: chained(entries.slice(start - 1)) && placed[0]?.parentId === sourceTip,
        tip: lane.getTipId(),
        meta,
        at: state?.at,
        control: state?.control,
        pending: ids.filter((id) => session.getValue(pendingEntry(id)) !== undefined),
        durable: readLaneState(session.getValue(laneState<ReadLaneState>("main"))?.value ?? {}),
        queue: queued(lane),
        current: lane.inspectExecution().current,
        events: events.slice(mark),
      };
    });
    expect(result.commits).toBe(1);
    expect(result.placed).toEqual([...MIX, "user:go"]);
    // Captured items keep the ids they were queued under; the prompt comes last.
    expect(result.placedIds.slice(0, -1)).toEqual(result.ids);
    expect(result.chain).toBe(true);
    expect(result.tip).toBe(result.placedIds.at(-1));
    expect(result.meta?.intent).toEqual({ kind: "run", promptEntryIds: [result.placedIds.at(-1)] });
    expect(result.at).toBe("starting");
    expect(result.control).toEqual({ status: "running" });
    expect(result.pending).toEqual([]);
    // Acceptance rewrites the lane state: it holds the open operation (QUALITY P12).
    expect(result.durable).toEqual({ lastOperationId: expect.any(String), inbox: [], pending: [], open: expect.objectContaining({ i: expect.any(String) }) });
    expect(result.queue).toEqual([]);
    expect(result.current).toMatchObject({ id: result.admission.operationId, kind: "run", status: "open", at: "starting" });
    // run_start → per placed entry its lifecycle (messages) and entry_added → queue_update.
    expect(types(result.events)).toEqual([
      "run_start",
      "entry_added",
      ...Array.from({ length: 8 }, () => ["message_start", "message_end", "entry_added"]).flat(),
      "stats",
      "queue_update",
    ]);
    expect(result.events[0]).toMatchObject({ type: "run_start", lane: "main", runId: result.admission.operationId, startedAt: result.admission.startedAt });
    expect(ofType(result.events, "entry_added").map((event) => event.entry.id)).toEqual(result.placedIds);
    expect(ofType(result.events, "message_end").every((event) => event.runId === result.admission.operationId)).toBe(true);
    expect(queueOf(ofType(result.events, "queue_update")[0])).toEqual([]);
  });

  it("one-at-a-time modes take only the oldest steer and the oldest followUp; remainders stay queued in order", async () => {
    const result = await withRig(async ({ harness, events }) => {
      const lane = await harness.lane("main");
      const { ids } = await queueMixed(lane);
      await harness.updateSettings({ steeringMode: "one-at-a-time", followUpMode: "one-at-a-time" });
      const sourceTip = lane.getTipId();
      const mark = events.length;
      expectOk(await lane.accept({ kind: "prompt", prompt: "go" }));
      const entries = transcript(lane);
      const remaining = lane.inspectExecution().queues.map((item) => item.entryId);
      return { ids, sourceTip, entries, queue: queued(lane), remaining, update: ofType(events.slice(mark), "queue_update") };
    });
    const placedAt = result.entries.indexOf("user:hold") + 1;
    expect(result.entries.slice(placedAt)).toEqual(["custom:note", "user:next-1", "user:steer-1", "user:follow-1", "user:written", "user:next-2", "user:go"]);
    expect(result.queue).toEqual(["steer:steer-2", "followUp:follow-2"]);
    expect(result.remaining).toEqual([result.ids[5], result.ids[6]]);
    expect(result.update).toHaveLength(1);
    expect(queueOf(result.update[0])).toEqual(["steer:steer-2", "followUp:follow-2"]);
  });

  it("an empty prompt with nothing queued is InvalidMessage{empty} and writes nothing", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const mark = events.length;
      const commits = commitCounter(session);
      const error = expectErr(await lane.accept({ kind: "prompt", prompt: "" }));
      return { error, commits: commits.count, events: events.slice(mark), current: lane.inspectExecution().current };
    });
    expect(result.error).toEqual({ code: "InvalidMessage", lane: "main", reason: "empty" });
    expect(result.commits).toBe(0);
    expect(result.events).toEqual([]);
    expect(result.current).toBeNull();
  });

  it("a lone queued write never validates an empty prompt; the write stays queued", async () => {
    const result = await withRig(async ({ session, harness }) => {
      const lane = await harness.lane("main");
      const hold = expectOk(await lane.accept({ kind: "prompt", prompt: "hold" }));
      expectOk(await lane.appendCustomEntry("note", { a: 1 }));
      expectOk(await lane.requestAbort(hold.operationId));
      settledRecord(await lane.drive({ operationId: hold.operationId }));
      const commits = commitCounter(session);
      const error = expectErr(await lane.accept({ kind: "prompt", prompt: "" }));
      return { error, commits: commits.count, queue: queued(lane), entries: transcript(lane) };
    });
    expect(result.error).toEqual({ code: "InvalidMessage", lane: "main", reason: "empty" });
    expect(result.commits).toBe(0);
    expect(result.queue).toEqual(["write:note"]);
    expect(result.entries).toEqual(["user:hold"]);
  });

  it.each(["steer", "followUp", "nextRun"] as const)("an empty prompt is a valid continuation run when a %s is queued", async (kind) => {
    const result = await withRig(async ({ session, harness }) => {
      const lane = await harness.lane("main");
      expectOk(await lane.prompt("first"));
      expectOk(await lane[kind](`queued ${kind}`));
      const admission = expectOk(await lane.accept({ kind: "prompt", prompt: "" }));
      const meta = readOperation(session, admission.operationId)?.meta;
      const record = settledRecord(await lane.drive({ operationId: admission.operationId, waitForRetry: true }));
      return { meta, record, entries: transcript(lane), queue: queued(lane) };
    });
    expect(result.meta?.intent).toEqual({ kind: "run", promptEntryIds: [] });
    expect(result.record.status).toBe("completed");
    expect(result.entries).toEqual(["user:first", "assistant:first", `user:queued ${kind}`, `assistant:queued ${kind}`]);
    expect(result.queue).toEqual([]);
  });

  it("LaneBusy while an operation is open, including while it is being aborted; nothing is written", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const first = expectOk(await lane.accept({ kind: "prompt", prompt: "first" }));
      const mark = events.length;
      const commits = commitCounter(session);
      const busy = expectErr(await lane.accept({ kind: "prompt", prompt: "second" }));
      const busySkill = expectErr(await lane.accept({ kind: "prompt_template", name: "anything" }));
      const during = commits.count;
      expectOk(await lane.requestAbort(first.operationId));
      const aborting = expectErr(await lane.accept({ kind: "prompt", prompt: "third" }));
      return { first, busy, busySkill, aborting, during, events: types(events.slice(mark)), entries: transcript(lane) };
    });
    const busy = { code: "LaneBusy", lane: "main", operationId: result.first.operationId, operationKind: "run" };
    expect(result.busy).toEqual(busy);
    expect(result.aborting).toEqual(busy);
    // Resource lookup happens before the lane command; an unknown template fails first.
    expect(result.busySkill).toEqual({ code: "UnknownTemplate", name: "anything" });
    expect(result.during).toBe(0);
    expect(result.events).toEqual(["operation_abort"]);
    expect(result.entries).toEqual(["user:first"]);
  });
});

describe("skill and prompt_template requests", () => {
  const resources = {
    skills: { review: { description: "Reviews", content: "Check the diff carefully." } },
    promptTemplates: {
      greet: { content: "Hello $1 and $2; everyone: $@" },
      blank: { content: "  $1  " },
    },
  };

  it("a skill becomes one user message carrying the skill content and the extra instructions", async () => {
    const result = await withRig(async ({ session, harness }) => {
      await harness.setResources(resources);
      const lane = await harness.lane("main");
      const admission = expectOk(await lane.accept({ kind: "skill", name: "review", additionalInstructions: "Be brief." }));
      const meta = readOperation(session, admission.operationId)?.meta;
      const entries = branchEntries(lane);
      return { meta, entries };
    });
    expect(result.entries).toHaveLength(1);
    const entry = result.entries[0];
    if (entry?.type !== "message" || entry.message.role !== "user" || typeof entry.message.content !== "string") throw new Error("expected one user text message");
    expect(entry.message.content).toContain("review");
    expect(entry.message.content).toContain("Check the diff carefully.");
    expect(entry.message.content).toContain("Be brief.");
    expect(result.meta?.intent).toEqual({ kind: "run", promptEntryIds: [entry.id] });
  });

  it("a prompt template substitutes $1, $2 and $@", async () => {
    const result = await withRig(async ({ harness }) => {
      await harness.setResources(resources);
      const lane = await harness.lane("main");
      expectOk(await lane.accept({ kind: "prompt_template", name: "greet", args: ["Ann", "Bob"] }));
      return transcript(lane);
    });
    expect(result).toEqual(["user:Hello Ann and Bob; everyone: Ann Bob"]);
  });

  it("unknown skills and templates fail before anything is written", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      await harness.setResources(resources);
      const lane = await harness.lane("main");
      const mark = events.length;
      const commits = commitCounter(session);
      const skill = expectErr(await lane.accept({ kind: "skill", name: "nope" }));
      const template = expectErr(await lane.accept({ kind: "prompt_template", name: "nope", args: ["x"] }));
      return { skill, template, commits: commits.count, events: events.slice(mark), current: lane.inspectExecution().current };
    });
    expect(result.skill).toEqual({ code: "UnknownSkill", name: "nope" });
    expect(result.template).toEqual({ code: "UnknownTemplate", name: "nope" });
    expect(result.commits).toBe(0);
    expect(result.events).toEqual([]);
    expect(result.current).toBeNull();
  });

  it("a template that formats to nothing places no message: invalid alone, a continuation with a queued steer", async () => {
    const result = await withRig(async ({ harness }) => {
      await harness.setResources(resources);
      const lane = await harness.lane("main");
      const alone = expectErr(await lane.accept({ kind: "prompt_template", name: "blank" }));
      expectOk(await lane.steer("queued steer"));
      expectOk(await lane.accept({ kind: "prompt_template", name: "blank" }));
      return { alone, entries: transcript(lane) };
    });
    expect(result.alone).toEqual({ code: "InvalidMessage", lane: "main", reason: "empty" });
    expect(result.entries).toEqual(["user:queued steer"]);
  });
});

describe("caller-supplied operation ids", () => {
  it("a fresh UUIDv7 becomes the operation id", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      const operationId = session.idGenerator.next();
      const admission = expectOk(await lane.accept({ kind: "prompt", prompt: "hi", operationId }));
      return { operationId, admission, runStart: ofType(events, "run_start")[0] };
    });
    expect(result.admission.operationId).toBe(result.operationId);
    expect(result.runStart?.runId).toBe(result.operationId);
  });

  it("a non-UUIDv7 id, or the id of a settled operation, is InvalidOperationId and writes nothing", async () => {
    const result = await withRig(async ({ session, harness }) => {
      const lane = await harness.lane("main");
      const settled = await acceptAndDrive(lane, "first");
      const commits = commitCounter(session);
      const v4 = crypto.randomUUID();
      return {
        settled,
        v4,
        notUuid: expectErr(await lane.accept({ kind: "prompt", prompt: "x", operationId: "not-a-uuid" })),
        fromV4: expectErr(await lane.accept({ kind: "prompt", prompt: "x", operationId: v4 })),
        reused: expectErr(await lane.accept({ kind: "prompt", prompt: "x", operationId: settled.operationId })),
        commits: commits.count,
        entries: transcript(lane),
      };
    });
    expect(result.notUuid).toEqual({ code: "InvalidOperationId", operationId: "not-a-uuid" });
    expect(result.fromV4).toEqual({ code: "InvalidOperationId", operationId: result.v4 });
    expect(result.reused).toEqual({ code: "InvalidOperationId", operationId: result.settled.operationId });
    expect(result.commits).toBe(0);
    expect(result.entries).toEqual(["user:first", "assistant:first"]);
  });

  it("the id of an operation still open on another lane is not fresh: InvalidOperationId, the open operation is untouched", async () => {
    const result = await withRig(async ({ session, harness }) => {
      const a = await harness.lane("a");
      const b = await harness.lane("b");
      const open = expectOk(await a.accept({ kind: "prompt", prompt: "on a" }));
      const commits = commitCounter(session);
      const reused = expectErr(await b.accept({ kind: "prompt", prompt: "on b", operationId: open.operationId }));
      const meta = readOperation(session, open.operationId)?.meta;
      const record = settledRecord(await a.drive({ operationId: open.operationId, waitForRetry: true }));
      return { open, reused, commits: commits.count, metaLane: meta?.lane, bCurrent: b.inspectExecution().current, bEntries: transcript(b), record, aEntries: transcript(a) };
    });
    expect(result.reused).toEqual({ code: "InvalidOperationId", operationId: result.open.operationId });
    expect(result.metaLane).toBe("a");
    expect(result.bCurrent).toBeNull();
    expect(result.bEntries).toEqual([]);
    expect(result.record.status).toBe("completed");
    expect(result.aEntries).toEqual(["user:on a", "assistant:on a"]);
  });
});
