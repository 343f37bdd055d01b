import { describe, expect, it } from "vitest";
import { restoreEntryPayload, restoreEntryPayloadText, storedEntryPayload } from "../../durable-objects/session/storage/entry-codec.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import type { NewEntry } from "../../schema/entries.ts";
import type { Usage } from "../../schema/usage.ts";

// The stored form of an entry's payload: a lone message as `[message]`, its usage sparse and its
// timestamp as a distance from the commit time, each only when restoring gives back the same JSON
// text; the rest as it was.

const TS = 1_796_190_449_940;

function assistantEntry(usage: Usage, timestamp = TS - 2): NewEntry {
  return {
    id: "e1",
    parentId: null,
    type: "message",
    message: { role: "assistant", content: [{ type: "text", text: "hi" }], api: "a", provider: "p", model: "m", usage, stopReason: "stop", timestamp },
  };
}

const plain = (entry: NewEntry): string => {
  const { id: _id, parentId: _parentId, type: _type, ...rest } = entry;
  return JSON.stringify(rest);
};
const roundTrip = (entry: NewEntry, ts = TS): string => restoreEntryPayloadText(JSON.stringify(storedEntryPayload(entry, ts)), ts);

describe("entry codec", () => {
  it("stores usage sparse and the timestamp as its distance from the commit, in place, and restores the same text", () => {
    const entry = assistantEntry({ ...zeroUsage(), input: 3, output: 4, totalTokens: 7 });
    const stored = JSON.stringify(storedEntryPayload(entry, TS));
    expect(stored).toBe(`[{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"a","provider":"p","model":"m","usage":[{"input":3,"output":4,"totalTokens":7}],"stopReason":"stop","timestamp":[-2]}]`);
    expect(roundTrip(entry)).toBe(plain(entry));
    expect(JSON.stringify(restoreEntryPayload(JSON.parse(stored), TS))).toBe(plain(entry));
    // A user message: only its timestamp; a distance forward in time restores as well.
    const user: NewEntry = { id: "u", parentId: null, type: "message", message: { role: "user", content: "x", timestamp: TS + 5 } };
    expect(JSON.stringify(storedEntryPayload(user, TS))).toBe(`[{"role":"user","content":"x","timestamp":[5]}]`);
    // A message entry with more than its message keeps the object form.
    const last: NewEntry = { ...user, terminate: true };
    expect(JSON.stringify(storedEntryPayload(last, TS))).toBe(`{"message":{"role":"user","content":"x","timestamp":[5]},"terminate":true}`);
    expect(roundTrip(last)).toBe(plain(last));
    expect(roundTrip(user)).toBe(plain(user));
    // A time the distance would not shorten stays as it is.
    const early: NewEntry = { id: "u", parentId: null, type: "message", message: { role: "user", content: "x", timestamp: 1 } };
    expect(JSON.stringify(storedEntryPayload(early, TS))).toBe(`[{"role":"user","content":"x","timestamp":1}]`);
    expect(roundTrip(early)).toBe(plain(early));
  });

  it("keeps a member whole when the short form would not restore it exactly", () => {
    // An optional count present as zero would be lost; keys out of the usual order would move;
    // a fractional timestamp is kept as it is.
    const zeroOptional = assistantEntry({ ...zeroUsage(), cacheWrite1h: 0 }, 1.5);
    const reordered = assistantEntry({ totalTokens: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: zeroUsage().cost }, 2.25);
    for (const entry of [zeroOptional, reordered]) {
      const stored = JSON.stringify(storedEntryPayload(entry, TS));
      expect(stored).not.toMatch(/"(usage|timestamp)":\[/);
      expect(roundTrip(entry)).toBe(plain(entry));
    }
  });

  it("leaves other entries and texts that only look alike unchanged", () => {
    const custom: NewEntry = { id: "c", parentId: null, type: "custom", customType: "k", data: { usage: [1, 2], timestamp: [3] } };
    expect(roundTrip(custom)).toBe(`{"data":{"usage":[1,2],"timestamp":[3]}}`);
    // A tool call's arguments may hold the same characters; only the message's own members are restored.
    const toolArguments = `{"message":{"role":"assistant","content":[{"type":"toolCall","id":"t","name":"n","arguments":{"usage":[{"a":1}],"timestamp":[1]}}]}}`;
    expect(restoreEntryPayloadText(toolArguments, TS)).toBe(toolArguments);
    expect(restoreEntryPayload({ message: { usage: [1, 2], timestamp: ["x"] } }, TS)).toEqual({ message: { usage: [1, 2], timestamp: ["x"] } });
  });
});
