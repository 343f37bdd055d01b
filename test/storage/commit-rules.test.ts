import { describe, expect, it } from "vitest";
import { list, value } from "../../harness/session/addresses.ts";
import { StorageCorruption } from "../../harness/session/errors.ts";
import type { Write } from "../../harness/session/storage.ts";
import { appendList, deleteList, deleteValue, insertEntry, insertUsage, setValue } from "../../harness/session/writes.ts";
import type { JsonValue } from "../../schema/json.ts";
import { toWire } from "../../schema/wire.ts";
import { createSession, unwrap } from "../helpers/sessions.ts";
import {
  assistantMessage,
  customEntry,
  dumpTables,
  messageEntry,
  newId,
  usageOf,
  usageRow,
  withStorage,
} from "../helpers/storage.ts";

const counterValue = value<number>("app.counter", "n");
const refValue = value<string>("app.ref", "entry");
const events = list<string>("app.events", "main");

describe("commit rules (reference §1.5)", () => {
  it("rule 1: all-or-none — a failing write late in a batch leaves nothing observable, and the next commit works", async () => {
    await withStorage((storage, state) => {
      const root = messageEntry(null);
      storage.commit([
        insertEntry(root),
        insertUsage(usageRow(usageOf({ input: 5, totalTokens: 5 }, { input: 0.5, total: 0.5 }))),
        setValue(counterValue, 1),
        appendList(events, "seeded"),
      ]);
      const failing: Write[][] = [
        // A duplicate id as the last write.
        [insertEntry(root)],
        // A missing parent as the last write.
        [insertEntry(messageEntry(newId()))],
      ];
      for (const last of failing) {
        const before = dumpTables(state);
        const statsBefore = storage.getStats();
        const seqBefore = storage.nextSeq;
        const batch: Write[] = [
          insertEntry(messageEntry(root.id, assistantMessage("partial"))),
          insertUsage(usageRow(usageOf({ output: 9, totalTokens: 9 }, { output: 0.25, total: 0.25 }))),
          setValue(counterValue, 2),
          setValue(refValue, "x"),
          deleteValue(counterValue),
          appendList(events, "lost"),
          deleteList(events),
          appendList(events, "fresh"),
          ...last,
        ];
        expect(() => storage.commit(batch)).toThrow(StorageCorruption);
        expect(dumpTables(state)).toEqual(before);
        expect(storage.getStats()).toStrictEqual(statsBefore);
        expect(storage.nextSeq).toBe(seqBefore);
        expect(storage.getValue(counterValue)?.value).toBe(1);
        expect(storage.getValue(refValue)).toBeUndefined();
        expect(storage.readList(events).map((e) => e.value)).toEqual(["seeded"]);
        expect(storage.scanEntries()).toHaveLength(1);
        expect(storage.scanUsage()).toHaveLength(1);
      }
      const seqBefore = storage.nextSeq;
      const next = storage.commit([insertEntry(messageEntry(root.id)), setValue(counterValue, 3)]);
      expect(next.firstSeq).toBe(seqBefore);
      expect(next.seqs).toEqual([seqBefore, seqBefore + 1]);
      expect(next.stats.messageCount).toBe(2);
      expect(storage.getValue(counterValue)).toMatchObject({ value: 3, seq: seqBefore + 1 });
    });
  });

  it("rule 2: every write gets a strictly increasing seq in write order, across write kinds and commits", async () => {
    await withStorage((storage) => {
      const first = messageEntry(null);
      const second = customEntry(first.id, "note", { n: 1 });
      const usage = usageRow(usageOf({ input: 1, totalTokens: 1 }), { entryId: first.id });
      const result = storage.commit([
        insertEntry(first),
        insertUsage(usage),
        setValue(counterValue, 1),
        appendList(events, "a"),
        deleteValue(refValue),
        deleteList(list<string>("app.events", "other")),
        appendList(events, "b"),
        setValue(refValue, first.id),
        insertEntry(second),
      ]);
      expect(result.seqs).toHaveLength(9);
      result.seqs.forEach((seq, index) => {
        if (index > 0) expect(seq).toBeGreaterThan(result.seqs[index - 1] ?? Infinity);
      });
      const [s0, s1, s2, s3, , , s6, s7, s8] = result.seqs;
      const entries = storage.getEntries([first.id, second.id]);
      expect(entries.get(first.id)?.seq).toBe(s0);
      expect(entries.get(second.id)?.seq).toBe(s8);
      expect(storage.scanUsage()).toEqual([{ ...usage, seq: s1 }]);
      expect(storage.getValue(counterValue)?.seq).toBe(s2);
      expect(storage.readList(events)).toEqual([
        { seq: s3, value: "a" },
        { seq: s6, value: "b" },
      ]);
      expect(storage.getValue(refValue)?.seq).toBe(s7);
      const later = storage.commit([setValue(counterValue, 2)]);
      expect(later.firstSeq).toBeGreaterThan(s8 ?? Infinity);
      expect(storage.getValue(counterValue)?.seq).toBe(later.firstSeq);
    });
  });

  it("rule 3: an entry may parent to one inserted earlier in the same commit, and a value may reference it", async () => {
    await withStorage((storage) => {
      const a = messageEntry(null);
      const b = messageEntry(a.id, assistantMessage());
      const c = customEntry(b.id, "marker");
      const pointer = value<string>("app.pointer");
      storage.commit([insertEntry(a), insertEntry(b), setValue(pointer, c.id), insertEntry(c)]);
      const target = storage.getValue(pointer)?.value;
      expect(target).toBe(c.id);
      expect(storage.scanBranch({ start: target ?? "" }).map((e) => e.id)).toEqual([c.id, b.id, a.id]);
      // Order matters: a parent written later in the same commit does not exist yet.
      const orphanParent = messageEntry(null);
      const child = messageEntry(orphanParent.id);
      expect(() => storage.commit([insertEntry(child), insertEntry(orphanParent)])).toThrow(StorageCorruption);
      expect(storage.getEntries([child.id, orphanParent.id]).size).toBe(0);
    });
  });

  it("rule 4: writing an existing entry or usage id is corruption (entries and usage share one id namespace)", async () => {
    await withStorage((storage, state) => {
      const entry = messageEntry(null);
      const row = usageRow(usageOf({ input: 3, totalTokens: 3 }));
      storage.commit([insertEntry(entry), insertUsage(row)]);
      const before = dumpTables(state);
      const attempts: [string, Write[]][] = [
        ["entry id reused by an entry", [insertEntry(messageEntry(null, undefined, entry.id))]],
        ["usage id reused by a usage row", [insertUsage({ ...usageRow(), id: row.id })]],
        ["entry id reused by a usage row", [insertUsage({ ...usageRow(), id: entry.id })]],
        ["usage id reused by an entry", [insertEntry(customEntry(null, "x", null, row.id))]],
      ];
      const sameCommitId = newId();
      attempts.push(["one id twice in one commit", [insertEntry(messageEntry(null, undefined, sameCommitId)), insertUsage({ ...usageRow(), id: sameCommitId })]]);
      for (const [label, writes] of attempts) {
        expect(() => storage.commit(writes), label).toThrow(StorageCorruption);
        expect(dumpTables(state), label).toEqual(before);
      }
      expect(storage.getStats().usage.input).toBe(3);
      expect(storage.scanUsage().map((r) => r.id)).toEqual([row.id]);
    });
  });

  it("a value scan reads the prefix's keys in order, and no more than its limit", async () => {
    await withStorage((storage) => {
      storage.commit(["b", "a", "c", "ab"].map((key) => setValue(value<string>("app.scan", key), key)));
      storage.commit([setValue(value<string>("app.scan2", "a"), "other namespace")]);
      const keys = (prefix: string, limit?: number) => storage.scanValues(value<string>("app.scan", prefix), limit).map((stored) => stored.address.key);
      expect(keys("")).toEqual(["a", "ab", "b", "c"]);
      expect(keys("", 2)).toEqual(["a", "ab"]);
      expect(keys("a", 1)).toEqual(["a"]);
      expect(keys("a")).toEqual(["a", "ab"]);
    });
  });

  it("rule 5: a value set replaces, delete removes, deleting an absent value is a no-op, set after delete recreates", async () => {
    await withStorage((storage) => {
      const first = storage.commit([setValue(counterValue, 1)]);
      expect(storage.getValue(counterValue)).toEqual({ address: counterValue, value: 1, seq: first.firstSeq });
      const second = storage.commit([setValue(counterValue, 2)]);
      expect(storage.getValue(counterValue)).toEqual({ address: counterValue, value: 2, seq: second.firstSeq });
      expect(storage.scanValues(value<number>("app.counter", ""))).toHaveLength(1);
      storage.commit([deleteValue(counterValue)]);
      expect(storage.getValue(counterValue)).toBeUndefined();
      const absentDelete = storage.commit([deleteValue(counterValue), deleteValue(value<number>("app.never"))]);
      expect(absentDelete.seqs).toHaveLength(2);
      expect(storage.getValue(counterValue)).toBeUndefined();
      expect(storage.getValue(value<number>("app.never"))).toBeUndefined();
      const recreated = storage.commit([setValue(counterValue, 7)]);
      expect(storage.getValue(counterValue)).toEqual({ address: counterValue, value: 7, seq: recreated.firstSeq });
      // Within one commit the last write wins: delete then set recreates, set then delete removes.
      const other = value<string>("app.other");
      storage.commit([setValue(counterValue, 8), deleteValue(counterValue), setValue(other, "a"), deleteValue(other), setValue(other, "b")]);
      expect(storage.getValue(counterValue)).toBeUndefined();
      expect(storage.getValue(other)?.value).toBe("b");
    });
  });

  it("rule 6: a list append carries one element and never reads the list", async () => {
    await withStorage((storage, state) => {
      const element = { text: "same" };
      const a = storage.commit([appendList(list<JsonValue>("app.log"), element)]);
      const b = storage.commit([appendList(list<JsonValue>("app.log"), element), appendList(list<JsonValue>("app.log"), [1, 2])]);
      expect(storage.readList(list<JsonValue>("app.log"))).toEqual([
        { seq: a.firstSeq, value: element },
        { seq: b.seqs[0], value: element },
        { seq: b.seqs[1], value: [1, 2] },
      ]);
      // Make the existing elements unreadable: an append that read the list would now fail.
      state.storage.sql.exec("UPDATE list_items SET value = '{not json' WHERE namespace = 'app.log'");
      const c = storage.commit([appendList(list<JsonValue>("app.log"), "after")]);
      expect(c.seqs).toHaveLength(1);
      expect(storage.readList(list<JsonValue>("app.log"), { cursor: { seq: b.seqs[1] ?? 0 } })).toEqual([{ seq: c.firstSeq, value: "after" }]);
    });
  });

  it("rule 7: a list delete removes the whole key, deleting an absent list is a no-op, delete + append makes a fresh list", async () => {
    await withStorage((storage) => {
      const other = list<string>("app.events", "other");
      storage.commit([appendList(events, "a"), appendList(events, "b"), appendList(other, "keep")]);
      storage.commit([deleteList(events)]);
      expect(storage.readList(events)).toEqual([]);
      expect(storage.readList(other).map((e) => e.value)).toEqual(["keep"]);
      const absent = storage.commit([deleteList(events), deleteList(list<string>("app.nothing"))]);
      expect(absent.seqs).toHaveLength(2);
      expect(storage.readList(events)).toEqual([]);
      storage.commit([appendList(events, "old1"), appendList(events, "old2")]);
      const fresh = storage.commit([appendList(events, "old3"), deleteList(events), appendList(events, "new1"), appendList(events, "new2")]);
      expect(storage.readList(events)).toEqual([
        { seq: fresh.seqs[2], value: "new1" },
        { seq: fresh.seqs[3], value: "new2" },
      ]);
      expect(storage.readList(other).map((e) => e.value)).toEqual(["keep"]);
    });
  });

  it("rule 8: transactions for one session are serialized — concurrent callers get distinct, ordered seqs and nothing is lost", async () => {
    const { stub } = await createSession("rule8");
    const calls = Array.from({ length: 30 }, (_, index) =>
      index % 3 === 0 ? stub.setValue("app", `k${index}`, toWire(index)) : stub.appendList("app", "log", toWire(index)),
    );
    const seqs = (await Promise.all(calls)).map((result) => unwrap(result).seq);
    expect(new Set(seqs).size).toBe(30);
    const elements = unwrap(await stub.readList("app", "log"));
    expect(elements).toHaveLength(20);
    const appendedSeqs = new Map<number, number>();
    seqs.forEach((seq, index) => {
      if (index % 3 !== 0) appendedSeqs.set(index, seq);
    });
    for (const element of elements) expect(element.seq).toBe(appendedSeqs.get(Number(element.value)));
    for (let i = 1; i < elements.length; i++) expect(elements[i]?.seq).toBeGreaterThan(elements[i - 1]?.seq ?? Infinity);
    for (let index = 0; index < 30; index += 3) {
      expect(unwrap(await stub.getValue("app", `k${index}`))).toEqual({ value: index, seq: seqs[index] });
    }
  });
});
