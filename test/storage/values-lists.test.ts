import { describe, expect, it } from "vitest";
import { list, value } from "../../harness/session/addresses.ts";
import { branchTip, branchTipInventoryPrefix, operationToolArgs, operationToolArgsPrefix } from "../../harness/session/builtin-addresses.ts";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, type ListElement } from "../../harness/session/storage.ts";
import { appendList, deleteList, deleteValue, setValue } from "../../harness/session/writes.ts";
import { withStorage } from "../helpers/storage.ts";

describe("values: getValue and scanValues", () => {
  it("getValue returns the address, the value and the seq of its last set; absent reads undefined", async () => {
    await withStorage((storage) => {
      const address = value<{ a: number[] }>("app.cfg", "k");
      expect(storage.getValue(address)).toBeUndefined();
      const result = storage.commit([setValue(address, { a: [1, 2, 3] })]);
      expect(storage.getValue(address)).toStrictEqual({ address, value: { a: [1, 2, 3] }, seq: result.firstSeq });
      expect(storage.getValue(value<{ a: number[] }>("app.cfg", "K"))).toBeUndefined();
      expect(storage.getValue(value<{ a: number[] }>("app.cfg"))).toBeUndefined();
      // The empty key is a key of its own.
      storage.commit([setValue(value<string>("app.cfg"), "root")]);
      expect(storage.getValue(value<string>("app.cfg"))?.value).toBe("root");
      expect(storage.getValue(address)?.value).toEqual({ a: [1, 2, 3] });
    });
  });

  it("scanValues: the key is a prefix, the namespace is exact, the result is key-ascending", async () => {
    await withStorage((storage) => {
      const keys = ["b:2", "a:10", "a:", "a:2", "a", "ab", "a:1", "b", "a:1:x", "A:1", "a:\u00e9", "a:Z", "a:z"];
      storage.commit(keys.map((key) => setValue(value<string>("app", key), `v-${key}`)));
      // Namespaces that share a prefix with "app" must never leak in.
      storage.commit([
        setValue(value<string>("app2", "a:1"), "other"),
        setValue(value<string>("ap", "a:1"), "other"),
        setValue(value<string>("app.sub", "a:1"), "other"),
      ]);
      const scan = (prefix: string) => storage.scanValues(value<string>("app", prefix)).map((v) => v.address.key);
      expect(scan("")).toEqual(["A:1", "a", "a:", "a:1", "a:10", "a:1:x", "a:2", "a:Z", "a:z", "a:\u00e9", "ab", "b", "b:2"]);
      expect(scan("a:")).toEqual(["a:", "a:1", "a:10", "a:1:x", "a:2", "a:Z", "a:z", "a:\u00e9"]);
      expect(scan("a:1")).toEqual(["a:1", "a:10", "a:1:x"]);
      expect(scan("a:1:")).toEqual(["a:1:x"]);
      expect(scan("b")).toEqual(["b", "b:2"]);
      expect(scan("c")).toEqual([]);
      const stored = storage.scanValues(value<string>("app", "a:1"));
      expect(stored.map((v) => v.value)).toEqual(["v-a:1", "v-a:10", "v-a:1:x"]);
      for (const entry of stored) {
        expect(entry.address).toEqual({ kind: "value", namespace: "app", key: entry.address.key });
        expect(storage.getValue(entry.address)?.seq).toBe(entry.seq);
      }
      expect(storage.scanValues(value<string>("app2", "")).map((v) => v.value)).toEqual(["other"]);
    });
  });

  it("scanValues treats SQL wildcard characters literally", async () => {
    await withStorage((storage) => {
      const keys = ["a_1", "ab1", "a%", "a%x", "axx", "a\\b"];
      storage.commit(keys.map((key) => setValue(value<number>("app.w", key), 1)));
      const scan = (prefix: string) => storage.scanValues(value<number>("app.w", prefix)).map((v) => v.address.key);
      expect(scan("a_")).toEqual(["a_1"]);
      expect(scan("a%")).toEqual(["a%", "a%x"]);
      expect(scan("a\\")).toEqual(["a\\b"]);
    });
  });

  it("scanValues works with the built-in prefix constructors and sees deletes", async () => {
    await withStorage((storage) => {
      storage.commit([
        setValue(operationToolArgs("op1", "s1", 0), { x: 1 }),
        setValue(operationToolArgs("op1", "s2", 0), { x: 2 }),
        setValue(operationToolArgs("op10", "s1", 0), { x: 10 }),
        setValue(branchTip("main"), null),
        setValue(branchTip("feature"), "some-entry"),
      ]);
      expect(storage.scanValues(operationToolArgsPrefix("op1")).map((v) => v.value)).toEqual([{ x: 1 }, { x: 2 }]);
      expect(storage.scanValues(operationToolArgsPrefix("op1", "s2")).map((v) => v.value)).toEqual([{ x: 2 }]);
      expect(storage.scanValues(branchTipInventoryPrefix()).map((v) => [v.address.key, v.value])).toEqual([
        ["feature", "some-entry"],
        ["main", null],
      ]);
      storage.commit([deleteValue(operationToolArgs("op1", "s1", 0))]);
      expect(storage.scanValues(operationToolArgsPrefix("op1")).map((v) => v.value)).toEqual([{ x: 2 }]);
    });
  });
});

describe("lists: readList", () => {
  it("the cursor is exclusive in both orders; ordering comes before the limit; an empty page ends iteration", async () => {
    await withStorage((storage) => {
      const log = list<number>("app.log");
      const result = storage.commit(Array.from({ length: 10 }, (_, i) => appendList(log, i)));
      const seqs = result.seqs;
      const at = (i: number) => seqs[i] ?? -1;
      expect(storage.readList(log).map((e) => e.value)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(storage.readList(log).map((e) => e.seq)).toEqual(seqs);
      expect(storage.readList(log, { order: "desc" }).map((e) => e.value)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      expect(storage.readList(log, { cursor: { seq: at(3) } }).map((e) => e.value)).toEqual([4, 5, 6, 7, 8, 9]);
      expect(storage.readList(log, { cursor: { seq: at(3) }, order: "desc" }).map((e) => e.value)).toEqual([2, 1, 0]);
      expect(storage.readList(log, { limit: 3 }).map((e) => e.value)).toEqual([0, 1, 2]);
      expect(storage.readList(log, { limit: 3, order: "desc" }).map((e) => e.value)).toEqual([9, 8, 7]);
      expect(storage.readList(log, { cursor: { seq: at(9) } })).toEqual([]);
      expect(storage.readList(log, { cursor: { seq: at(0) }, order: "desc" })).toEqual([]);
      for (const order of ["asc", "desc"] as const) {
        const pages: number[][] = [];
        let cursor: { seq: number } | undefined;
        for (let guard = 0; guard < 10; guard++) {
          const page: ListElement<number>[] = storage.readList(log, { order, limit: 4, ...(cursor && { cursor }) });
          if (page.length === 0) break;
          pages.push(page.map((e) => e.value));
          const last = page[page.length - 1];
          cursor = last && { seq: last.seq };
        }
        expect(pages.flat()).toEqual(order === "asc" ? [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] : [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
        expect(pages.map((p) => p.length)).toEqual([4, 4, 2]);
      }
    });
  });

  it("the limit defaults to 1000 and is clamped to 10000", async () => {
    await withStorage((storage) => {
      const big = list<number>("app.big");
      const total = LIST_LIMIT_MAX + 50;
      for (let start = 0; start < total; start += 2500) {
        storage.commit(Array.from({ length: Math.min(2500, total - start) }, (_, i) => appendList(big, start + i)));
      }
      const defaultPage = storage.readList(big);
      expect(defaultPage).toHaveLength(LIST_LIMIT_DEFAULT);
      expect(defaultPage[999]?.value).toBe(999);
      const clamped = storage.readList(big, { limit: 20000 });
      expect(clamped).toHaveLength(LIST_LIMIT_MAX);
      expect(clamped[LIST_LIMIT_MAX - 1]?.value).toBe(LIST_LIMIT_MAX - 1);
      const rest = storage.readList(big, { limit: 20000, cursor: { seq: clamped[LIST_LIMIT_MAX - 1]?.seq ?? 0 } });
      expect(rest.map((e) => e.value)).toEqual(Array.from({ length: 50 }, (_, i) => LIST_LIMIT_MAX + i));
      expect(storage.readList(big, { limit: Number.MAX_SAFE_INTEGER, order: "desc" })).toHaveLength(LIST_LIMIT_MAX);
      expect(storage.readList(big, { limit: 1 })).toHaveLength(1);
    });
  });

  it("a limit that is not a positive safe integer throws RangeError", async () => {
    await withStorage((storage) => {
      const log = list<number>("app.log");
      storage.commit([appendList(log, 1)]);
      for (const limit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1]) {
        expect(() => storage.readList(log, { limit }), `limit ${limit}`).toThrow(RangeError);
      }
    });
  });

  it("absent and emptied lists both read as []", async () => {
    await withStorage((storage) => {
      const log = list<string>("app.log");
      expect(storage.readList(log)).toEqual([]);
      expect(storage.readList(log, { order: "desc" })).toEqual([]);
      storage.commit([appendList(log, "x")]);
      storage.commit([deleteList(log)]);
      expect(storage.readList(log)).toEqual([]);
      expect(storage.readList(log, { order: "desc", cursor: { seq: 1_000_000 } })).toEqual([]);
    });
  });

  it("lists are keyed by exact (namespace, key)", async () => {
    await withStorage((storage) => {
      const a = list<string>("app.l", "a");
      const ab = list<string>("app.l", "ab");
      const root = list<string>("app.l");
      const otherNs = list<string>("app.l2", "a");
      storage.commit([appendList(a, "a1"), appendList(ab, "ab1"), appendList(root, "r1"), appendList(otherNs, "o1"), appendList(a, "a2")]);
      expect(storage.readList(a).map((e) => e.value)).toEqual(["a1", "a2"]);
      expect(storage.readList(ab).map((e) => e.value)).toEqual(["ab1"]);
      expect(storage.readList(root).map((e) => e.value)).toEqual(["r1"]);
      expect(storage.readList(otherNs).map((e) => e.value)).toEqual(["o1"]);
      storage.commit([deleteList(a)]);
      expect(storage.readList(ab).map((e) => e.value)).toEqual(["ab1"]);
      expect(storage.readList(otherNs).map((e) => e.value)).toEqual(["o1"]);
    });
  });
});

describe("a value and a list at the same (namespace, key)", () => {
  it("do not interfere in storage", async () => {
    await withStorage((storage) => {
      const v = value<string>("app.same", "k");
      const l = list<string>("app.same", "k");
      const first = storage.commit([setValue(v, "value"), appendList(l, "element")]);
      expect(storage.getValue(v)).toEqual({ address: v, value: "value", seq: first.seqs[0] });
      expect(storage.readList(l)).toEqual([{ seq: first.seqs[1], value: "element" }]);
      storage.commit([deleteList(l)]);
      expect(storage.getValue(v)?.value).toBe("value");
      expect(storage.scanValues(value<string>("app.same", "")).map((x) => x.value)).toEqual(["value"]);
      storage.commit([appendList(l, "again"), deleteValue(v)]);
      expect(storage.getValue(v)).toBeUndefined();
      expect(storage.readList(l).map((e) => e.value)).toEqual(["again"]);
      storage.commit([setValue(v, "back")]);
      expect(storage.readList(l).map((e) => e.value)).toEqual(["again"]);
      expect(storage.getValue(v)?.value).toBe("back");
    });
  });
});
