import { describe, expect, it } from "vitest";
import { restoreEntryPayload, restoreEntryPayloadText, storedEntryPayload } from "../../durable-objects/sql/entry-codec.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import type { NewEntry } from "../../schema/entries.ts";
import type { Usage } from "../../schema/usage.ts";

// The stored form of an entry's payload: a message's usage sparse only when restoring it gives
// back the same JSON text; everything else as it was.

function assistantEntry(usage: Usage): NewEntry {
  return {
    id: "e1",
    parentId: null,
    type: "message",
    message: { role: "assistant", content: [{ type: "text", text: "hi" }], api: "a", provider: "p", model: "m", usage, stopReason: "stop", timestamp: 5 },
  };
}

const roundTrip = (entry: NewEntry): string => restoreEntryPayloadText(JSON.stringify(storedEntryPayload(entry)));

describe("entry codec", () => {
  it("stores a whole usage sparse, in the same key position, and restores the same text", () => {
    const entry = assistantEntry({ ...zeroUsage(), input: 3, output: 4, totalTokens: 7 });
    const stored = JSON.stringify(storedEntryPayload(entry));
    expect(stored).toBe(`{"message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"a","provider":"p","model":"m","usage":[{"input":3,"output":4,"totalTokens":7}],"stopReason":"stop","timestamp":5}}`);
    const { id: _id, parentId: _parentId, type: _type, ...plain } = entry;
    expect(roundTrip(entry)).toBe(JSON.stringify(plain));
  });

  it("keeps a usage whole when the sparse form would not restore it exactly", () => {
    // An optional count present as zero would be lost; keys out of the usual order would move.
    const zeroOptional = assistantEntry({ ...zeroUsage(), cacheWrite1h: 0 });
    const reordered = assistantEntry({ totalTokens: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: zeroUsage().cost });
    for (const entry of [zeroOptional, reordered]) {
      const stored = JSON.stringify(storedEntryPayload(entry));
      expect(stored).not.toContain(`"usage":[`);
      expect(roundTrip(entry)).toBe(stored);
    }
  });

  it("leaves other entries and texts that only look alike unchanged", () => {
    const user: NewEntry = { id: "u", parentId: null, type: "message", message: { role: "user", content: "x", timestamp: 1 } };
    expect(storedEntryPayload(user)).toEqual({ message: user.message });
    const custom: NewEntry = { id: "c", parentId: null, type: "custom", customType: "k", data: { usage: [1, 2] } };
    expect(restoreEntryPayloadText(JSON.stringify(storedEntryPayload(custom)))).toBe(`{"data":{"usage":[1,2]}}`);
    // A tool call's arguments may hold the same characters; only the message's own usage is restored.
    const toolArguments = `{"message":{"role":"assistant","content":[{"type":"toolCall","id":"t","name":"n","arguments":{"usage":[{"a":1}]}}]}}`;
    expect(restoreEntryPayloadText(toolArguments)).toBe(toolArguments);
    expect(restoreEntryPayload({ message: { usage: [1, 2] } })).toEqual({ message: { usage: [1, 2] } });
  });
});
