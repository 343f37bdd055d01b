import { describe, expect, it } from "vitest";
import { list, value } from "../../harness/session/addresses.ts";
import { StorageClosed, StorageCorruption } from "../../harness/session/errors.ts";
import type { Write } from "../../harness/session/storage.ts";
import { appendList, deleteValue, insertEntry, insertUsage, setValue } from "../../harness/session/writes.ts";
import { customEntry, dumpTables, messageEntry, newId, usageOf, usageRow, withStorage } from "../helpers/storage.ts";

const counterValue = value<number>("app.counter", "n");
const events = list<string>("app.events", "main");

describe("commit results, stamps, corruption and close (reference §1.5–1.6)", () => {
  it("a missing parent is always corruption and writes nothing", async () => {
    await withStorage((storage, state) => {
      const root = messageEntry(null);
      storage.commit([insertEntry(root)]);
      const before = dumpTables(state);
      expect(() => storage.commit([insertEntry(messageEntry(newId()))])).toThrow(/does not exist/);
      expect(() => storage.commit([setValue(counterValue, 1), insertEntry(customEntry(newId(), "x"))])).toThrow(StorageCorruption);
      expect(dumpTables(state)).toEqual(before);
    });
  });

  it("CommitResult has firstSeq, one seq per write, the commit timestamp and the totals right after the commit", async () => {
    let now = 1_000;
    await withStorage(
      (storage) => {
        const entry = messageEntry(null);
        const row = usageRow(usageOf({ input: 2, output: 3, totalTokens: 5 }, { input: 0.1, output: 0.2, total: 0.30000000000000004 }));
        const result = storage.commit([insertEntry(entry), insertUsage(row), setValue(counterValue, 1)]);
        expect(Object.keys(result).sort()).toEqual(["firstSeq", "seqs", "stats", "timestamp"]);
        expect(result.firstSeq).toBe(result.seqs[0]);
        expect(result.seqs).toHaveLength(3);
        expect(result.timestamp).toBe(1_000);
        expect(storage.getEntries([entry.id]).get(entry.id)?.timestamp).toBe(1_000);
        expect(result.stats).toStrictEqual({ messageCount: 1, usage: row.usage });
        expect(storage.getStats()).toStrictEqual(result.stats);
        // The returned totals are a snapshot, not a live view.
        result.stats.usage.input = 999;
        expect(storage.getStats().usage.input).toBe(2);
        now = 2_000;
        const next = storage.commit([insertEntry(messageEntry(entry.id))]);
        expect(next.timestamp).toBe(2_000);
        expect(next.stats.messageCount).toBe(2);
      },
      { clock: () => now },
    );
  });

  it("the commit stamps seq and timestamp: stale stamps on a full Entry handed back in never shadow them", async () => {
    await withStorage(
      (storage) => {
        const first = messageEntry(null);
        storage.commit([insertEntry(first)]);
        const stored = storage.getEntries([first.id]).get(first.id);
        expect(stored).toBeDefined();
        if (!stored) return;
        // An Entry is assignable to NewEntry, so a copy with stale stamps type-checks.
        const copy = { ...stored, id: newId(), parentId: first.id, seq: 999, timestamp: 5 };
        const result = storage.commit([insertEntry(copy)]);
        const read = storage.getEntries([copy.id]).get(copy.id);
        expect(read).toMatchObject({ seq: result.firstSeq, timestamp: 777 });
        expect(storage.scanBranch({ start: copy.id })[0]).toEqual(read);
        expect(storage.scanBranchStructure({ start: copy.id })[0]).toMatchObject({ seq: result.firstSeq, timestamp: 777 });
      },
      { clock: () => 777 },
    );
  });

  it("close is idempotent and every later call throws StorageClosed", async () => {
    await withStorage((storage) => {
      storage.commit([setValue(counterValue, 1)]);
      storage.close();
      storage.close();
      expect(() => storage.commit([setValue(counterValue, 2)])).toThrow(StorageClosed);
      expect(() => storage.getValue(counterValue)).toThrow(StorageClosed);
      expect(() => storage.readList(events)).toThrow(StorageClosed);
      expect(() => storage.scanEntries()).toThrow(StorageClosed);
      expect(() => storage.scanBranch({ start: newId() })).toThrow(StorageClosed);
      expect(() => storage.getStats()).toThrow(StorageClosed);
    });
  });

  it("JSON null is a stored value, distinct from absence", async () => {
    await withStorage((storage) => {
      const nullable = value<string | null>("app.nullable");
      const result = storage.commit([setValue(nullable, null)]);
      expect(storage.getValue(nullable)).toEqual({ address: nullable, value: null, seq: result.firstSeq });
      expect(storage.scanValues(value<string | null>("app.nullable", "")).map((v) => v.value)).toEqual([null]);
      storage.commit([appendList(list<null>("app.nulls"), null)]);
      expect(storage.readList(list<null>("app.nulls")).map((e) => e.value)).toEqual([null]);
      storage.commit([deleteValue(nullable)]);
      expect(storage.getValue(nullable)).toBeUndefined();
      // undefined is not a value: absence can only be written as a delete.
      const undefinedWrite: Write = { kind: "value", op: "set", namespace: "app.nullable", key: "", value: undefined };
      expect(() => storage.commit([undefinedWrite])).toThrow(TypeError);
      expect(storage.getValue(nullable)).toBeUndefined();
      const nullData = customEntry(null, "n", null);
      storage.commit([insertEntry(nullData), insertEntry(customEntry(nullData.id, "n"))]);
      const [withNull, without] = storage.scanEntries({ customType: "n" });
      expect(withNull).toHaveProperty("data", null);
      expect(without).not.toHaveProperty("data");
    });
  });
});
