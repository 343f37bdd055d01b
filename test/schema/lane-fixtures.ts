import { expect } from "vitest";
import type { CompactionEntry, CustomEntry, Entry, MessageEntry } from "../../schema/entries.ts";
import type { HarnessEvent, LaneSnapshot, SnapshotOperation } from "../../schema/lane.ts";
import type { AgentMessage, AssistantMessage, ToolResultMessage, UserMessage } from "../../schema/messages.ts";
import { isRebase, reduceLaneSnapshot } from "../../schema/reduce-lane-snapshot.ts";
import type { Usage } from "../../schema/usage.ts";

// Small fixture builders for the reduceLaneSnapshot tests. Every fixture is a fresh object, so tests
// may freeze what they are handed.

export const LANE = "main";

export function usage(tokens = 0): Usage {
  return {
    input: tokens,
    output: tokens,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: tokens * 2,
    cost: { input: tokens / 100, output: tokens / 100, cacheRead: 0, cacheWrite: 0, total: tokens / 50 },
  };
}

export function user(text: string): UserMessage {
  return { role: "user", content: text, timestamp: 10 };
}

export function assistant(text: string, stopReason: AssistantMessage["stopReason"] = "stop"): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "scripted",
    provider: "scripted",
    model: "echo",
    usage: usage(),
    stopReason,
    timestamp: 20,
  };
}

export function toolCallMessage(toolCallId: string, toolName: string): AssistantMessage {
  return {
    ...assistant("", "toolUse"),
    content: [{ type: "toolCall", id: toolCallId, name: toolName, arguments: { path: "/a" } }],
  };
}

export function toolResult(toolCallId: string, toolName: string, isError = false): ToolResultMessage {
  return { role: "toolResult", toolCallId, toolName, content: [{ type: "text", text: "ok" }], isError, timestamp: 30 };
}

export function messageEntry(id: string, parentId: string | null, message: AgentMessage): MessageEntry {
  return { id, parentId, seq: 1, timestamp: 100, type: "message", message };
}

export function compactionEntry(id: string, parentId: string | null): CompactionEntry {
  return { id, parentId, seq: 1, timestamp: 100, type: "compaction", summary: "sum", retainedTail: [], tokensBefore: 500, fromHook: false };
}

export function customEntry(id: string, parentId: string | null): CustomEntry {
  return { id, parentId, seq: 1, timestamp: 100, type: "custom", customType: "note", data: { n: 1 } };
}

/** An idle lane whose transcript is one user message `e1`. */
export function idleSnapshot(overrides: Partial<LaneSnapshot> = {}): LaneSnapshot {
  return {
    lane: LANE,
    tipId: "e1",
    transcript: [messageEntry("e1", null, user("hello"))],
    configuration: {
      model: { provider: "scripted", modelId: "echo" },
      thinkingLevel: "off",
      activeToolNames: ["read"],
    },
    stats: { messageCount: 1, usage: usage(1) },
    operation: null,
    queues: [],
    faulted: false,
    ...overrides,
  };
}

export function operation(overrides: Partial<SnapshotOperation> = {}): SnapshotOperation {
  return { id: "op1", kind: "run", startedAt: 1000, fromTipId: "e1", status: "open", runningTools: [], ...overrides };
}

/** The idle snapshot with an open operation `op1` (a run unless overridden). */
export function openSnapshot(op: Partial<SnapshotOperation> = {}): LaneSnapshot {
  return idleSnapshot({ operation: operation(op) });
}

export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/**
 * Reduces with the input deep-frozen (a write would throw) and checks that neither the snapshot nor
 * the event changed against structured clones taken before; fails on a rebase.
 */
export function reduce(snapshot: LaneSnapshot, event: HarnessEvent): LaneSnapshot {
  const snapshotBefore = structuredClone(snapshot);
  const eventBefore = structuredClone(event);
  deepFreeze(snapshot);
  deepFreeze(event);
  const next = reduceLaneSnapshot(snapshot, event);
  expect(snapshot).toStrictEqual(snapshotBefore);
  expect(event).toStrictEqual(eventBefore);
  if (isRebase(next)) throw new Error(`unexpected rebase for ${event.type}`);
  return next;
}

export function fold(snapshot: LaneSnapshot, events: HarnessEvent[]): LaneSnapshot {
  return events.reduce(reduce, snapshot);
}

/** The open operation of a snapshot; fails the test if there is none. */
export function op(snapshot: LaneSnapshot): SnapshotOperation {
  if (snapshot.operation === null) throw new Error("expected an open operation");
  return snapshot.operation;
}

export function transcriptIds(snapshot: LaneSnapshot): string[] {
  return snapshot.transcript.map((entry: Entry) => entry.id);
}
