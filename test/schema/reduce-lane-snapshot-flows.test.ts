import { describe, expect, it } from "vitest";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import { reduceLaneSnapshot } from "../../schema/reduce-lane-snapshot.ts";
import {
  LANE,
  assistant,
  compactionEntry,
  deepFreeze,
  fold,
  idleSnapshot,
  messageEntry,
  op,
  openSnapshot,
  reduce,
  toolCallMessage,
  toolResult,
  usage,
  user,
} from "./lane-fixtures.ts";

// Cross-cutting rules (other lanes, session-wide usage, purity) and whole flows folded event by event.

const handle = { provider: "scripted", modelId: "echo", api: "scripted", id: "job-1" };
const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });

/** One event of every kind, all addressed to `lane`, touching operation `op1` where they name one. */
function catalog(lane: string): HarnessEvent[] {
  const tool = { lane, runId: "op1", turnId: "t1", toolCallId: "a", toolName: "read" };
  return [
    { type: "run_start", lane, runId: "r9", startedAt: 1 },
    { type: "compaction_start", lane, runId: "c9", reason: "manual", startedAt: 1 },
    { type: "navigation_start", lane, runId: "n9", targetId: null, startedAt: 1 },
    { type: "operation_abort", lane, operationId: "op1", steer: [user("s")], followUp: [] },
    { type: "run_suspend", lane, runId: "op1", reason: "deferred", deferred: handle, poll: 1 },
    { type: "run_resume", lane, runId: "op1" },
    { type: "retry_scheduled", lane, runId: "op1", step: "assistant", attempt: 1, maxAttempts: 2, delayMs: 1, notBefore: 2, errorMessage: "e" },
    { type: "retry_start", lane, runId: "op1", step: "assistant", attempt: 1 },
    { type: "retry_end", lane, runId: "op1", step: "assistant", attempt: 1, success: true },
    { type: "message_start", lane, runId: "op1", message: assistant("", "pending") },
    { type: "message_update", lane, runId: "op1", entryId: "r", delta: { blocks: [{ i: 0, t: "text", append: "x" }] } },
    { type: "message_end", lane, runId: "op1", message: assistant("x") },
    { type: "tool_start", ...tool, args: { path: "/z" } },
    { type: "tool_update", ...tool, partialResult: text("p") },
    { type: "tool_end", ...tool, result: text("r"), isError: false, terminate: false },
    { type: "entry_added", lane, entry: messageEntry("e2", "e1", toolResult("a", "read")) },
    { type: "entry_added", lane, entry: compactionEntry("c", "e1") },
    { type: "queue_update", lane, queues: [] },
    { type: "config_update", lane, property: "thinkingLevel", value: "max", previous: "off" },
    { type: "run_end", lane, runId: "op1", status: "aborted", fromTipId: "e1", tipId: "e1", endedAt: 9 },
    { type: "compaction_end", lane, runId: "op1", reason: "manual", status: "declined", endedAt: 9 },
    { type: "handler_error", kind: "hook", hook: "before_run", error: "x", lane },
    { type: "lane_created", lane, at: null },
  ];
}

/** A snapshot with every optional part populated, so each event has something to change. */
function busySnapshot(): LaneSnapshot {
  return openSnapshot({
    status: "open",
    retry: { attempt: 1, maxAttempts: 3, nextAttemptAt: 5 },
    deferred: { handle, poll: 1 },
    streamingMessage: assistant("he", "pending"),
    runningTools: [
      { status: "running", toolCallId: "a", toolName: "read", args: { path: "/a" }, result: text("half") },
      { status: "settled", toolCallId: "b", toolName: "read", args: { path: "/b" }, result: text("done"), isError: false },
    ],
  });
}

describe("lane scoping", () => {
  it("ignores every lane-scoped event addressed to another lane (the lane stream never carries them)", () => {
    for (const event of catalog("other")) {
      const snapshot = busySnapshot();
      expect(reduce(snapshot, event), event.type).toBe(snapshot);
    }
    const navigation = reduceLaneSnapshot(busySnapshot(), {
      type: "navigation_end", lane: "other", runId: "op1", status: "completed", fromTipId: null, tipId: null, endedAt: 1,
    });
    expect(navigation).toStrictEqual(busySnapshot());
  });

  it("replaces the session stats with a stats event: messages placed anywhere reach every lane", () => {
    const stats = { messageCount: 42, usage: usage(5) };
    const next = reduce(busySnapshot(), { type: "stats", stats });
    expect(next).toStrictEqual({ ...busySnapshot(), stats });
  });

  it("applies usage from any lane, and without a lane, as session-wide totals", () => {
    const row = { id: "u", seq: 1, usage: usage(2), adjustment: false };
    const fromOther = reduce(idleSnapshot(), { type: "usage", lane: "other", row, totals: usage(7) });
    expect(fromOther.stats.usage).toStrictEqual(usage(7));
    const noLane = reduce(fromOther, { type: "usage", row, totals: usage(9) });
    expect(noLane.stats).toStrictEqual({ messageCount: 1, usage: usage(9) });
  });
});

describe("purity", () => {
  it("never mutates a deep-frozen input, for every event kind", () => {
    const sessionWide: HarnessEvent[] = [
      { type: "navigation_end", lane: LANE, runId: "op1", status: "completed", fromTipId: "e1", tipId: null, endedAt: 1 },
      { type: "usage", row: { id: "u", seq: 1, usage: usage(1), adjustment: false }, totals: usage(3) },
      { type: "fault", code: "c", message: "m" },
      { type: "stats", stats: { messageCount: 3, usage: usage(3) } },
    ];
    for (const event of [...catalog(LANE), ...sessionWide]) {
      deepFreeze(event);
      const snapshot = deepFreeze(busySnapshot());
      const before = structuredClone(snapshot);
      const next = reduceLaneSnapshot(snapshot, event);
      expect(snapshot, event.type).toStrictEqual(before);
      expect(next, event.type).not.toBe(undefined);
    }
  });

  it("shares untouched parts and copies changed paths", () => {
    const snapshot = busySnapshot();
    const next = reduce(snapshot, { type: "entry_added", lane: LANE, entry: messageEntry("e2", "e1", user("more")) });
    expect(next).not.toBe(snapshot);
    expect(next.transcript).not.toBe(snapshot.transcript);
    expect(next.stats).not.toBe(snapshot.stats);
    expect(next.configuration).toBe(snapshot.configuration);
    expect(next.operation).toBe(snapshot.operation);
    expect(snapshot.transcript).toHaveLength(1);
  });
});

describe("flows", () => {
  it("folds a full run from an idle snapshot to the expected final snapshot", () => {
    const prompt = user("what is 2+2?");
    const final = assistant("4");
    const row = { id: "u1", seq: 1, usage: usage(5), adjustment: false };
    const events: HarnessEvent[] = [
      { type: "run_start", lane: LANE, runId: "r1", startedAt: 100 },
      { type: "message_start", lane: LANE, runId: "r1", message: prompt },
      { type: "message_end", lane: LANE, runId: "r1", message: prompt, entryId: "e2" },
      { type: "entry_added", lane: LANE, entry: messageEntry("e2", "e1", prompt) },
      { type: "queue_update", lane: LANE, queues: [] },
      { type: "turn_start", lane: LANE, runId: "r1", turnId: "t1" },
      { type: "message_start", lane: LANE, runId: "r1", message: assistant("", "pending") },
      { type: "message_update", lane: LANE, runId: "r1", entryId: "e3", delta: { blocks: [] } },
      { type: "message_update", lane: LANE, runId: "r1", entryId: "e3", delta: { blocks: [{ i: 0, t: "text", append: "4" }] } },
      { type: "message_end", lane: LANE, runId: "r1", message: final, entryId: "e3" },
      { type: "entry_added", lane: LANE, entry: messageEntry("e3", "e2", final) },
      { type: "usage", lane: LANE, row, totals: usage(6) },
      { type: "turn_end", lane: LANE, runId: "r1", turnId: "t1", message: final, toolResults: [] },
      { type: "run_end", lane: LANE, runId: "r1", status: "completed", fromTipId: "e1", tipId: "e3", endedAt: 200 },
    ];
    const start = idleSnapshot();
    const streaming = fold(start, events.slice(0, 9));
    expect(op(streaming).streamingMessage).toStrictEqual(assistant("4", "pending"));
    expect(fold(start, events)).toStrictEqual({
      ...idleSnapshot(),
      tipId: "e3",
      transcript: [messageEntry("e1", null, user("hello")), messageEntry("e2", "e1", prompt), messageEntry("e3", "e2", final)],
      lastResult: { operationId: "r1", kind: "run", status: "completed", fromTipId: "e1", tipId: "e3", startedAt: 100, endedAt: 200 },
      stats: { messageCount: 3, usage: usage(6) },
      operation: null,
    });
  });

  it("walks a tool row from start through updates and settlement until its entry removes it", () => {
    const base = { lane: LANE, runId: "r1", turnId: "t1", toolCallId: "call-1", toolName: "read" };
    let s = fold(idleSnapshot(), [
      { type: "run_start", lane: LANE, runId: "r1", startedAt: 1 },
      { type: "entry_added", lane: LANE, entry: messageEntry("e2", "e1", toolCallMessage("call-1", "read")) },
      { type: "tool_start", ...base, args: { path: "/a" } },
    ]);
    expect(op(s).runningTools).toStrictEqual([{ status: "running", toolCallId: "call-1", toolName: "read", args: { path: "/a" } }]);
    s = fold(s, [
      { type: "tool_update", ...base, partialResult: text("10%") },
      { type: "tool_update", ...base, partialResult: text("90%") },
    ]);
    expect(op(s).runningTools).toStrictEqual([{ status: "running", toolCallId: "call-1", toolName: "read", args: { path: "/a" }, result: text("90%") }]);
    s = reduce(s, { type: "tool_end", ...base, result: text("contents"), isError: false, terminate: false });
    expect(op(s).runningTools).toStrictEqual([
      { status: "settled", toolCallId: "call-1", toolName: "read", args: { path: "/a" }, result: text("contents"), isError: false },
    ]);
    s = reduce(s, { type: "entry_added", lane: LANE, entry: messageEntry("e3", "e2", toolResult("call-1", "read")) });
    expect(op(s).runningTools).toStrictEqual([]);
    expect(s.tipId).toBe("e3");
    expect(s.stats.messageCount).toBe(3);
  });

  it("keeps the run open across an in-run compaction segment", () => {
    const previous = { operationId: "old", kind: "run" as const, status: "completed" as const, fromTipId: null, tipId: "e1", startedAt: 1, endedAt: 2 };
    const start = idleSnapshot({ lastResult: previous });
    const s = fold(start, [
      { type: "run_start", lane: LANE, runId: "r1", startedAt: 10 },
      { type: "compaction_start", lane: LANE, runId: "r1", reason: "threshold", startedAt: 11 },
      { type: "entry_added", lane: LANE, entry: compactionEntry("c1", "e1") },
      { type: "compaction_end", lane: LANE, runId: "r1", reason: "threshold", status: "completed", entryId: "c1", endedAt: 12 },
    ]);
    expect(s.operation).toStrictEqual({ id: "r1", kind: "run", startedAt: 10, fromTipId: "e1", status: "open", runningTools: [] });
    expect(s.lastResult).toStrictEqual(previous);
    expect(s.transcript).toStrictEqual([compactionEntry("c1", "e1")]);
    const ended = reduce(s, { type: "run_end", lane: LANE, runId: "r1", status: "completed", fromTipId: "e1", tipId: "c1", endedAt: 20 });
    expect(ended.operation).toBeNull();
    expect(ended.lastResult?.operationId).toBe("r1");
  });

  it("folds a standalone compaction to its result record", () => {
    const s = fold(idleSnapshot(), [
      { type: "compaction_start", lane: LANE, runId: "c1", reason: "manual", startedAt: 10 },
      { type: "entry_added", lane: LANE, entry: compactionEntry("c", "e1") },
      { type: "compaction_end", lane: LANE, runId: "c1", reason: "manual", status: "completed", entryId: "c", endedAt: 15 },
    ]);
    expect(s).toStrictEqual({
      ...idleSnapshot(),
      tipId: "c",
      transcript: [compactionEntry("c", "e1")],
      lastResult: { operationId: "c1", kind: "compaction", status: "completed", fromTipId: "e1", tipId: "c", startedAt: 10, endedAt: 15 },
    });
  });

  it("suspends, resumes, retries and aborts a run", () => {
    const r = { lane: LANE, runId: "r1" };
    let s = fold(idleSnapshot(), [
      { type: "run_start", ...r, startedAt: 1 },
      { type: "message_start", ...r, message: assistant("", "pending") },
      { type: "run_suspend", ...r, reason: "deferred", deferred: handle, poll: 1 },
    ]);
    expect(op(s)).toStrictEqual({ id: "r1", kind: "run", startedAt: 1, fromTipId: "e1", status: "open", runningTools: [], deferred: { handle, poll: 1 } });
    s = fold(s, [
      { type: "run_resume", ...r },
      { type: "retry_scheduled", ...r, step: "assistant", attempt: 1, maxAttempts: 3, delayMs: 10, notBefore: 11, errorMessage: "429" },
    ]);
    expect(op(s)).toStrictEqual({ id: "r1", kind: "run", startedAt: 1, fromTipId: "e1", status: "open", runningTools: [], retry: { attempt: 1, maxAttempts: 3, nextAttemptAt: 11 } });
    s = fold(s, [
      { type: "retry_start", ...r, step: "assistant", attempt: 1 },
      { type: "operation_abort", lane: LANE, operationId: "r1", steer: [], followUp: [] },
    ]);
    expect(op(s)).toStrictEqual({ id: "r1", kind: "run", startedAt: 1, fromTipId: "e1", status: "aborting", runningTools: [] });
    s = reduce(s, { type: "run_end", ...r, status: "aborted", fromTipId: "e1", tipId: "e1", endedAt: 30 });
    expect(s.operation).toBeNull();
    expect(s.lastResult).toStrictEqual({ operationId: "r1", kind: "run", status: "aborted", fromTipId: "e1", tipId: "e1", startedAt: 1, endedAt: 30 });
  });
});
