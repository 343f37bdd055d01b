import { describe, expect, it } from "vitest";
import type { HarnessEvent, RunningToolRow } from "../../schema/lane.ts";
import { isRebase, reduceLaneSnapshot } from "../../schema/reduce-lane-snapshot.ts";
import {
  LANE,
  assistant,
  compactionEntry,
  customEntry,
  idleSnapshot,
  messageEntry,
  op,
  openSnapshot,
  reduce,
  toolResult,
  transcriptIds,
  usage,
  user,
} from "./lane-fixtures.ts";

// One block per row of the reference §5.4 table. `reduce` also asserts the input is never mutated.

const handle = { provider: "scripted", modelId: "echo", api: "scripted", id: "job-1", pollAfterMs: 500 };
const running = (toolCallId: string): RunningToolRow => ({ status: "running", toolCallId, toolName: "read", args: { path: toolCallId } });
const result = (text: string) => ({ content: [{ type: "text" as const, text }] });

describe("operation starts", () => {
  it("run_start opens a run from the current tip", () => {
    const next = reduce(idleSnapshot(), { type: "run_start", lane: LANE, runId: "r1", startedAt: 5 });
    expect(next.operation).toStrictEqual({ id: "r1", kind: "run", startedAt: 5, fromTipId: "e1", status: "open", runningTools: [] });
    const empty = reduce(idleSnapshot({ tipId: null, transcript: [] }), { type: "run_start", lane: LANE, runId: "r2", startedAt: 6 });
    expect(op(empty).fromTipId).toBeNull();
  });

  it("compaction_start opens a standalone compaction when idle", () => {
    const next = reduce(idleSnapshot(), { type: "compaction_start", lane: LANE, runId: "c1", reason: "manual", startedAt: 7 });
    expect(next.operation).toStrictEqual({ id: "c1", kind: "compaction", startedAt: 7, fromTipId: "e1", status: "open", runningTools: [] });
  });

  it("compaction_start inside an open run is a segment and changes nothing", () => {
    const snapshot = openSnapshot();
    expect(reduce(snapshot, { type: "compaction_start", lane: LANE, runId: "op1", reason: "threshold", startedAt: 8 })).toBe(snapshot);
  });

  it("navigation_start opens a navigation", () => {
    const next = reduce(idleSnapshot(), { type: "navigation_start", lane: LANE, runId: "n1", targetId: "e0", startedAt: 9 });
    expect(next.operation).toStrictEqual({ id: "n1", kind: "navigation", startedAt: 9, fromTipId: "e1", status: "open", runningTools: [] });
  });
});

describe("operation state", () => {
  it("operation_abort marks the matching operation aborting", () => {
    const event: HarnessEvent = { type: "operation_abort", lane: LANE, operationId: "op1", steer: [], followUp: [] };
    expect(op(reduce(openSnapshot(), event)).status).toBe("aborting");
    const other = openSnapshot({ id: "op2" });
    expect(reduce(other, event)).toBe(other);
  });

  it("run_suspend drops the streaming message and records the deferred handle", () => {
    const event: HarnessEvent = { type: "run_suspend", lane: LANE, runId: "op1", reason: "deferred", deferred: handle, poll: 2 };
    const next = op(reduce(openSnapshot({ streamingMessage: assistant("par", "pending") }), event));
    expect(next.deferred).toStrictEqual({ handle, poll: 2 });
    expect("streamingMessage" in next).toBe(false);
    const other = openSnapshot({ id: "op2" });
    expect(reduce(other, event)).toBe(other);
  });

  it("run_resume deletes deferred on the matching operation only", () => {
    const event: HarnessEvent = { type: "run_resume", lane: LANE, runId: "op1" };
    const next = op(reduce(openSnapshot({ deferred: { handle, poll: 1 } }), event));
    expect("deferred" in next).toBe(false);
    const other = openSnapshot({ id: "op2", deferred: { handle, poll: 1 } });
    expect(reduce(other, event)).toBe(other);
  });

  it("retry_scheduled records the retry wait", () => {
    const event: HarnessEvent = {
      type: "retry_scheduled", lane: LANE, runId: "op1", step: "assistant", attempt: 2, maxAttempts: 5, delayMs: 100, notBefore: 4242, errorMessage: "503",
    };
    expect(op(reduce(openSnapshot(), event)).retry).toStrictEqual({ attempt: 2, maxAttempts: 5, nextAttemptAt: 4242 });
    const other = openSnapshot({ id: "op2" });
    expect(reduce(other, event)).toBe(other);
  });

  it("retry_start and retry_end delete retry", () => {
    const retry = { attempt: 1, maxAttempts: 3, nextAttemptAt: 50 };
    const started = op(reduce(openSnapshot({ retry }), { type: "retry_start", lane: LANE, runId: "op1", step: "assistant", attempt: 1 }));
    expect("retry" in started).toBe(false);
    const ended = op(reduce(openSnapshot({ retry }), { type: "retry_end", lane: LANE, runId: "op1", step: "assistant", attempt: 1, success: false, finalError: "x" }));
    expect("retry" in ended).toBe(false);
  });
});

describe("streaming messages", () => {
  it("message_start sets streamingMessage only for a pending assistant with a runId", () => {
    const pending = assistant("", "pending");
    expect(op(reduce(openSnapshot(), { type: "message_start", lane: LANE, runId: "op1", message: pending })).streamingMessage).toStrictEqual(pending);
    const ignored: HarnessEvent[] = [
      { type: "message_start", lane: LANE, message: pending },
      { type: "message_start", lane: LANE, runId: "op1", message: assistant("done") },
      { type: "message_start", lane: LANE, runId: "op1", message: user("hi") },
      { type: "message_start", lane: LANE, runId: "op2", message: pending },
    ];
    for (const event of ignored) {
      const snapshot = openSnapshot();
      expect(reduce(snapshot, event)).toBe(snapshot);
    }
  });

  it("message_update applies its delta to streamingMessage: appended text, a replacement, a tool call, usage", () => {
    const start = openSnapshot({ streamingMessage: assistant("h", "pending") });
    const appended = reduce(start, { type: "message_update", lane: LANE, runId: "op1", entryId: "r", delta: { blocks: [{ i: 0, t: "text", append: "el" }] } });
    expect(op(appended).streamingMessage).toStrictEqual(assistant("hel", "pending"));
    const grown = reduce(appended, {
      type: "message_update",
      lane: LANE,
      runId: "op1",
      entryId: "r",
      delta: {
        blocks: [
          { i: 0, t: "text", replace: "Hello", textSignature: "sig" },
          { i: 1, t: "toolCall", id: "c1", name: "read", arguments: { path: "/a" } },
        ],
        usage: usage(3),
      },
    });
    expect(op(grown).streamingMessage).toStrictEqual({
      ...assistant("Hello", "pending"),
      content: [
        { type: "text", text: "Hello", textSignature: "sig" },
        { type: "toolCall", id: "c1", name: "read", arguments: { path: "/a" } },
      ],
      usage: usage(3),
    });
    // The input snapshots are never mutated.
    expect(op(start).streamingMessage).toStrictEqual(assistant("h", "pending"));
    // Without a streaming message (a replica that missed message_start) a delta changes nothing.
    const idle = openSnapshot({});
    expect(reduce(idle, { type: "message_update", lane: LANE, runId: "op1", entryId: "r", delta: { blocks: [{ i: 0, t: "text", append: "x" }] } })).toBe(idle);
  });

  it("message_end deletes streamingMessage when it carries a runId", () => {
    const end: HarnessEvent = { type: "message_end", lane: LANE, runId: "op1", message: assistant("hello") };
    expect("streamingMessage" in op(reduce(openSnapshot({ streamingMessage: assistant("he", "pending") }), end))).toBe(false);
    const snapshot = openSnapshot({ streamingMessage: assistant("he", "pending") });
    expect(reduce(snapshot, { type: "message_end", lane: LANE, message: user("q"), entryId: "e2" })).toBe(snapshot);
  });
});

describe("running tools", () => {
  const toolEvent = { lane: LANE, runId: "op1", turnId: "t1", toolName: "read" };

  it("tool_start appends a running row, or replaces an existing row with the same id", () => {
    const added = reduce(openSnapshot({ runningTools: [running("a")] }), { type: "tool_start", ...toolEvent, toolCallId: "b", args: { path: "/b" } });
    expect(op(added).runningTools).toStrictEqual([running("a"), { status: "running", toolCallId: "b", toolName: "read", args: { path: "/b" } }]);
    const captured: RunningToolRow = { ...running("a"), result: result("progress") };
    const upserted = reduce(openSnapshot({ runningTools: [captured] }), { type: "tool_start", ...toolEvent, toolCallId: "a", args: { path: "/a2" } });
    expect(op(upserted).runningTools).toStrictEqual([{ status: "running", toolCallId: "a", toolName: "read", args: { path: "/a2" } }]);
  });

  it("tool_update sets the partial result of a running row only", () => {
    const next = reduce(openSnapshot({ runningTools: [running("a"), running("b")] }), { type: "tool_update", ...toolEvent, toolCallId: "b", partialResult: result("50%") });
    expect(op(next).runningTools).toStrictEqual([running("a"), { ...running("b"), result: result("50%") }]);
    const settled: RunningToolRow = { ...running("a"), status: "settled", result: result("done"), isError: false };
    const settledSnapshot = openSnapshot({ runningTools: [settled] });
    expect(reduce(settledSnapshot, { type: "tool_update", ...toolEvent, toolCallId: "a", partialResult: result("late") })).toBe(settledSnapshot);
    const unknown = openSnapshot({ runningTools: [running("a")] });
    expect(reduce(unknown, { type: "tool_update", ...toolEvent, toolCallId: "missing", partialResult: result("late") })).toBe(unknown);
  });

  it("tool_end settles an existing row keeping its args, and cannot create a row", () => {
    const end = { type: "tool_end" as const, ...toolEvent, result: result("out"), isError: true, terminate: false };
    const next = reduce(openSnapshot({ runningTools: [{ ...running("a"), result: result("p") }] }), { ...end, toolCallId: "a" });
    expect(op(next).runningTools).toStrictEqual([
      { status: "settled", toolCallId: "a", toolName: "read", args: { path: "a" }, result: result("out"), isError: true },
    ]);
    const snapshot = openSnapshot({ runningTools: [running("a")] });
    expect(reduce(snapshot, { ...end, toolCallId: "zzz" })).toBe(snapshot);
  });
});

describe("entry_added", () => {
  it("pushes a message entry, moves the tip and counts the message", () => {
    const next = reduce(idleSnapshot(), { type: "entry_added", lane: LANE, entry: messageEntry("e2", "e1", assistant("hi")) });
    expect(transcriptIds(next)).toStrictEqual(["e1", "e2"]);
    expect(next.tipId).toBe("e2");
    expect(next.stats.messageCount).toBe(2);
  });

  it("pushes a custom entry without counting it", () => {
    const next = reduce(idleSnapshot(), { type: "entry_added", lane: LANE, entry: customEntry("e2", "e1") });
    expect(transcriptIds(next)).toStrictEqual(["e1", "e2"]);
    expect(next.tipId).toBe("e2");
    expect(next.stats.messageCount).toBe(1);
  });

  it("replaces the transcript with a compaction entry", () => {
    const next = reduce(idleSnapshot(), { type: "entry_added", lane: LANE, entry: compactionEntry("c", "e1") });
    expect(next.transcript).toStrictEqual([compactionEntry("c", "e1")]);
    expect(next.tipId).toBe("c");
    expect(next.stats.messageCount).toBe(1);
  });

  it("a toolResult removes the matching running or settled row", () => {
    const settled: RunningToolRow = { ...running("b"), status: "settled", result: result("done"), isError: false };
    const snapshot = openSnapshot({ runningTools: [running("a"), settled] });
    const afterB = reduce(snapshot, { type: "entry_added", lane: LANE, entry: messageEntry("e2", "e1", toolResult("b", "read")) });
    expect(op(afterB).runningTools).toStrictEqual([running("a")]);
    const afterA = reduce(afterB, { type: "entry_added", lane: LANE, entry: messageEntry("e3", "e2", toolResult("a", "read")) });
    expect(op(afterA).runningTools).toStrictEqual([]);
    expect(transcriptIds(afterA)).toStrictEqual(["e1", "e2", "e3"]);
    expect(afterA.stats.messageCount).toBe(3);
  });
});

describe("replicated state", () => {
  it("queue_update replaces the queues", () => {
    const queues = [{ entryId: "q1", kind: "followUp" as const, type: "message" as const, message: user("later") }];
    expect(reduce(idleSnapshot(), { type: "queue_update", lane: LANE, queues }).queues).toStrictEqual(queues);
  });

  it("usage sets stats.usage to the totals", () => {
    const row = { id: "u1", seq: 1, usage: usage(3), adjustment: false };
    const next = reduce(idleSnapshot(), { type: "usage", lane: LANE, row, totals: usage(4) });
    expect(next.stats).toStrictEqual({ messageCount: 1, usage: usage(4) });
  });

  it("config_update sets model, thinkingLevel and activeToolNames", () => {
    const base = { type: "config_update" as const, lane: LANE, previous: null };
    const model = reduce(idleSnapshot(), { ...base, property: "model", value: { provider: "p", modelId: "m" } });
    expect(model.configuration.model).toStrictEqual({ provider: "p", modelId: "m" });
    expect(reduce(idleSnapshot(), { ...base, property: "thinkingLevel", value: "high" }).configuration.thinkingLevel).toBe("high");
    expect(reduce(idleSnapshot(), { ...base, property: "activeTools", value: ["a", "b"] }).configuration.activeToolNames).toStrictEqual(["a", "b"]);
  });

  it("config_update with a malformed value changes nothing", () => {
    const base = { type: "config_update" as const, lane: LANE, previous: null };
    const events: HarnessEvent[] = [
      { ...base, property: "model", value: "p/m" },
      { ...base, property: "thinkingLevel", value: "extreme" },
      { ...base, property: "activeTools", value: ["a", 1] },
    ];
    for (const event of events) {
      const snapshot = idleSnapshot();
      expect(reduce(snapshot, event)).toBe(snapshot);
    }
  });
});

describe("operation ends", () => {
  it("run_end records lastResult from the event, clears the operation and moves the tip", () => {
    const next = reduce(openSnapshot({ startedAt: 1000 }), {
      type: "run_end", lane: LANE, runId: "op1", status: "completed", fromTipId: "e1", tipId: "e9", endedAt: 2000,
    });
    expect(next.lastResult).toStrictEqual({ operationId: "op1", kind: "run", status: "completed", fromTipId: "e1", tipId: "e9", startedAt: 1000, endedAt: 2000 });
    expect(next.operation).toBeNull();
    expect(next.tipId).toBe("e9");
  });

  it("run_end carries the error of a failed run", () => {
    const error = { code: "provider_error", message: "boom" };
    const next = reduce(openSnapshot(), { type: "run_end", lane: LANE, runId: "op1", status: "failed", error, fromTipId: "e1", tipId: "e1", endedAt: 3 });
    expect(next.lastResult?.error).toStrictEqual(error);
  });

  it("run_end for another operation changes nothing", () => {
    const end: HarnessEvent = { type: "run_end", lane: LANE, runId: "op1", status: "completed", fromTipId: "e1", tipId: "e2", endedAt: 3 };
    for (const snapshot of [openSnapshot({ id: "op2" }), openSnapshot({ kind: "compaction" }), idleSnapshot()]) {
      expect(reduce(snapshot, end)).toBe(snapshot);
    }
  });

  it("compaction_end closes a standalone compaction with the current tip", () => {
    const snapshot = idleSnapshot({ tipId: "c", transcript: [compactionEntry("c", "e1")], operation: { ...op(openSnapshot({ kind: "compaction", startedAt: 40 })) } });
    const next = reduce(snapshot, { type: "compaction_end", lane: LANE, runId: "op1", reason: "manual", status: "completed", entryId: "c", endedAt: 50 });
    expect(next.lastResult).toStrictEqual({ operationId: "op1", kind: "compaction", status: "completed", fromTipId: "e1", tipId: "c", startedAt: 40, endedAt: 50 });
    expect(next.operation).toBeNull();
  });

  it("compaction_end inside a run is a segment end and changes nothing", () => {
    const snapshot = openSnapshot();
    expect(reduce(snapshot, { type: "compaction_end", lane: LANE, runId: "op1", reason: "overflow", status: "failed", error: { code: "x", message: "y" }, endedAt: 1 })).toBe(snapshot);
  });

  it("navigation_end asks for a rebase", () => {
    const next = reduceLaneSnapshot(openSnapshot({ kind: "navigation" }), {
      type: "navigation_end", lane: LANE, runId: "op1", status: "completed", fromTipId: "e1", tipId: "e0", endedAt: 9,
    });
    expect(next).toStrictEqual({ rebase: true });
    expect(isRebase(next)).toBe(true);
    expect(isRebase(idleSnapshot())).toBe(false);
  });
});

describe("faults and ignored events", () => {
  it("fault sets faulted", () => {
    expect(reduce(idleSnapshot(), { type: "fault", code: "storage", message: "disk" }).faulted).toBe(true);
    const faulted = idleSnapshot({ faulted: true });
    expect(reduce(faulted, { type: "fault", code: "storage", message: "again" })).toBe(faulted);
  });

  it("returns the same snapshot for events that do not touch it", () => {
    const ignored: HarnessEvent[] = [
      { type: "handler_error", kind: "event", error: "listener threw", lane: LANE },
      { type: "turn_start", lane: LANE, runId: "op1", turnId: "t1" },
      { type: "turn_end", lane: LANE, runId: "op1", turnId: "t1", message: assistant("a"), toolResults: [] },
      { type: "value_update", value: "session_name", name: "s" },
      { type: "value_update", value: "entry_label", targetId: "e1", label: "x" },
      { type: "lane_created", lane: LANE, at: "e1" },
      { type: "settings_update", property: "retryPolicy", value: { maxAttempts: 2 }, previous: null },
      { type: "run_resume", lane: LANE, runId: "other" },
    ];
    for (const event of ignored) {
      const snapshot = openSnapshot({ deferred: { handle, poll: 1 } });
      expect(reduce(snapshot, event)).toBe(snapshot);
    }
  });
});
