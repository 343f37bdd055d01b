import { describe, expect, it } from "vitest";
import type { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import type { StorageBranchScan } from "../../harness/session/storage.ts";
import { insertEntry } from "../../harness/session/writes.ts";
import type { Entry, NewEntry } from "../../schema/entries.ts";
import {
  assistantMessage,
  branchSummaryEntry,
  compactionEntry,
  customEntry,
  messageEntry,
  userMessage,
  withStorage,
} from "../helpers/storage.ts";

// One tree, written oldest first:
//   m1 → m2 → c1 → m3 → n1 → m4 → c2 → m5 → bs → m6        (tip A)
//                    ╰→ m7 → n2 → m8                         (tip B, forks at m3)
// c = compaction, n = custom "note" (n2 is custom "other"), bs = branch_summary.
interface Tree {
  m1: NewEntry; m2: NewEntry; c1: NewEntry; m3: NewEntry; n1: NewEntry; m4: NewEntry; c2: NewEntry;
  m5: NewEntry; bs: NewEntry; m6: NewEntry; m7: NewEntry; n2: NewEntry; m8: NewEntry;
}

function buildTree(storage: SqlSessionStorage): Tree & { seq: (e: NewEntry) => number } {
  const m1 = messageEntry(null, userMessage("one"));
  const m2 = messageEntry(m1.id, assistantMessage("two"));
  const c1 = compactionEntry(m2.id, "first compaction");
  const m3 = messageEntry(c1.id, userMessage("three"));
  const n1 = customEntry(m3.id, "note", { n: 1 });
  const m4 = messageEntry(n1.id, assistantMessage("four"));
  const c2 = compactionEntry(m4.id, "second compaction");
  const m5 = messageEntry(c2.id, userMessage("five"));
  const bs = branchSummaryEntry(m5.id, m4.id);
  const m6 = messageEntry(bs.id, assistantMessage("six"));
  const m7 = messageEntry(m3.id, userMessage("seven"));
  const n2 = customEntry(m7.id, "other");
  const m8 = messageEntry(n2.id, assistantMessage("eight"));
  const tree: Tree = { m1, m2, c1, m3, n1, m4, c2, m5, bs, m6, m7, n2, m8 };
  // Two commits, interleaving the fork's entries so seqs of the two branches mix.
  storage.commit([m1, m2, c1, m3, m7, n1].map(insertEntry));
  storage.commit([m4, n2, c2, m5, m8, bs, m6].map(insertEntry));
  const seqs = new Map(storage.scanEntries().map((e) => [e.id, e.seq]));
  return { ...tree, seq: (e) => seqs.get(e.id) ?? -1 };
}

const ids = (entries: readonly { id: string }[]): string[] => entries.map((e) => e.id);
const idsOf = (entries: readonly NewEntry[]): string[] => entries.map((e) => e.id);

function structureOf(entry: Entry) {
  return {
    id: entry.id,
    parentId: entry.parentId,
    seq: entry.seq,
    timestamp: entry.timestamp,
    type: entry.type,
    ...(entry.type === "custom" && { customType: entry.customType }),
  };
}

describe("scanBranch (reference §1.6 evaluation order)", () => {
  it("walks the root-ward path newestFirst by default and oldestFirst on request", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      const pathA = [t.m6, t.bs, t.m5, t.c2, t.m4, t.n1, t.m3, t.c1, t.m2, t.m1];
      expect(ids(storage.scanBranch({ start: t.m6.id }))).toEqual(idsOf(pathA));
      expect(ids(storage.scanBranch({ start: t.m6.id, order: "newestFirst" }))).toEqual(idsOf(pathA));
      expect(ids(storage.scanBranch({ start: t.m6.id, order: "oldestFirst" }))).toEqual(idsOf([...pathA].reverse()));
      expect(ids(storage.scanBranch({ start: t.m3.id }))).toEqual(idsOf([t.m3, t.c1, t.m2, t.m1]));
      expect(ids(storage.scanBranch({ start: t.m1.id, order: "oldestFirst" }))).toEqual([t.m1.id]);
      // Full entries, identical to a direct read.
      const direct = storage.getEntries(idsOf(pathA));
      for (const entry of storage.scanBranch({ start: t.m6.id })) expect(entry).toEqual(direct.get(entry.id));
    });
  });

  it("a forked tree: each tip's scan sees only its own path and the shared ancestors", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      const pathB = ids(storage.scanBranch({ start: t.m8.id }));
      expect(pathB).toEqual(idsOf([t.m8, t.n2, t.m7, t.m3, t.c1, t.m2, t.m1]));
      const pathA = ids(storage.scanBranch({ start: t.m6.id }));
      for (const only of [t.m7, t.n2, t.m8]) expect(pathA).not.toContain(only.id);
      for (const only of [t.n1, t.m4, t.c2, t.m5, t.bs, t.m6]) expect(pathB).not.toContain(only.id);
      expect(ids(storage.scanBranch({ start: t.m8.id, order: "oldestFirst", customType: "other" }))).toEqual([t.n2.id]);
      expect(storage.scanBranch({ start: t.m8.id, customType: "note" })).toEqual([]);
    });
  });

  it("stops inclusively at stopAtType and stopAtId", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      expect(ids(storage.scanBranch({ start: t.m6.id, stopAtType: "compaction" }))).toEqual(idsOf([t.m6, t.bs, t.m5, t.c2]));
      expect(ids(storage.scanBranch({ start: t.m6.id, stopAtId: t.m4.id }))).toEqual(idsOf([t.m6, t.bs, t.m5, t.c2, t.m4]));
      expect(ids(storage.scanBranch({ start: t.m6.id, stopAtType: "branch_summary" }))).toEqual(idsOf([t.m6, t.bs]));
      expect(ids(storage.scanBranch({ start: t.m6.id, stopAtId: t.m6.id }))).toEqual([t.m6.id]);
      // The first match of either stop ends the walk.
      expect(ids(storage.scanBranch({ start: t.m6.id, stopAtType: "compaction", stopAtId: t.m5.id }))).toEqual(idsOf([t.m6, t.bs, t.m5]));
      // A stop id that is not on the path never matches.
      expect(storage.scanBranch({ start: t.m8.id, stopAtId: t.m6.id })).toHaveLength(7);
      expect(ids(storage.scanBranch({ start: t.m8.id, stopAtType: "compaction" }))).toEqual(idsOf([t.m8, t.n2, t.m7, t.m3, t.c1]));
    });
  });

  it("stopAtType applies after ordering: oldestFirst stops at the oldest compaction, newestFirst at the newest", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      expect(ids(storage.scanBranch({ start: t.m6.id, order: "oldestFirst", stopAtType: "compaction" }))).toEqual(idsOf([t.m1, t.m2, t.c1]));
      expect(ids(storage.scanBranch({ start: t.m6.id, order: "newestFirst", stopAtType: "compaction" }))).toEqual(idsOf([t.m6, t.bs, t.m5, t.c2]));
      expect(ids(storage.scanBranch({ start: t.m6.id, order: "oldestFirst", stopAtId: t.m3.id }))).toEqual(idsOf([t.m1, t.m2, t.c1, t.m3]));
      // The canonical context read: newestFirst up to the newest compaction, then reversed.
      const context = storage.scanBranch({ start: t.m6.id, stopAtType: "compaction" }).reverse();
      expect(context[0]).toMatchObject({ type: "compaction", summary: "second compaction" });
    });
  });

  it("filters by type/customType after the stop: a stop entry is returned only if it passes the filter", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      const start = t.m6.id;
      expect(ids(storage.scanBranch({ start, stopAtType: "compaction", type: "message" }))).toEqual(idsOf([t.m6, t.m5]));
      expect(ids(storage.scanBranch({ start, stopAtType: "compaction", type: "compaction" }))).toEqual([t.c2.id]);
      expect(ids(storage.scanBranch({ start, order: "oldestFirst", stopAtType: "compaction", type: "compaction" }))).toEqual([t.c1.id]);
      expect(ids(storage.scanBranch({ start, stopAtId: t.n1.id, customType: "note" }))).toEqual([t.n1.id]);
      expect(ids(storage.scanBranch({ start, stopAtId: t.m4.id, customType: "note" }))).toEqual([]);
      // The note lies beyond the newest compaction, so the stop hides it.
      expect(storage.scanBranch({ start, stopAtType: "compaction", customType: "note" })).toEqual([]);
      expect(ids(storage.scanBranch({ start, type: "custom", customType: "note" }))).toEqual([t.n1.id]);
      expect(storage.scanBranch({ start, type: "message", customType: "note" })).toEqual([]);
      expect(ids(storage.scanBranch({ start, type: "compaction" }))).toEqual(idsOf([t.c2, t.c1]));
      expect(ids(storage.scanBranch({ start, type: "message", order: "oldestFirst" }))).toEqual(idsOf([t.m1, t.m2, t.m3, t.m4, t.m5, t.m6]));
    });
  });

  it("the cursor is exclusive in both orders and applies after stop and filter; the limit comes last", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      const start = t.m6.id;
      expect(ids(storage.scanBranch({ start, cursor: { seq: t.seq(t.m5) } }))).toEqual(idsOf([t.c2, t.m4, t.n1, t.m3, t.c1, t.m2, t.m1]));
      expect(ids(storage.scanBranch({ start, order: "oldestFirst", cursor: { seq: t.seq(t.m3) } }))).toEqual(
        idsOf([t.n1, t.m4, t.c2, t.m5, t.bs, t.m6]),
      );
      // Stop first, then cursor: nothing lies past the stop.
      expect(storage.scanBranch({ start, stopAtType: "compaction", cursor: { seq: t.seq(t.c2) } })).toEqual([]);
      expect(storage.scanBranch({ start, order: "oldestFirst", stopAtType: "compaction", cursor: { seq: t.seq(t.c1) } })).toEqual([]);
      // Filter, then cursor, then limit.
      expect(ids(storage.scanBranch({ start, type: "message", cursor: { seq: t.seq(t.m5) }, limit: 2 }))).toEqual(idsOf([t.m4, t.m3]));
      expect(ids(storage.scanBranch({ start, type: "message", order: "oldestFirst", cursor: { seq: t.seq(t.m2) }, limit: 2 }))).toEqual(
        idsOf([t.m3, t.m4]),
      );
      expect(ids(storage.scanBranch({ start, limit: 3 }))).toEqual(idsOf([t.m6, t.bs, t.m5]));
      expect(ids(storage.scanBranch({ start, order: "oldestFirst", limit: 3 }))).toEqual(idsOf([t.m1, t.m2, t.c1]));
      expect(() => storage.scanBranch({ start, limit: 0 })).toThrow(RangeError);
      expect(() => storage.scanBranch({ start, limit: 1.5 })).toThrow(RangeError);
    });
  });

  it("pages with limit + cursor cover the path exactly once, in both orders, ending on an empty page", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      for (const order of ["newestFirst", "oldestFirst"] as const) {
        const whole = ids(storage.scanBranch({ start: t.m6.id, order }));
        const paged: string[] = [];
        let cursor: { seq: number } | undefined;
        for (let guard = 0; guard < 20; guard++) {
          const page = storage.scanBranch({ start: t.m6.id, order, limit: 3, ...(cursor && { cursor }) });
          if (page.length === 0) break;
          paged.push(...ids(page));
          const last = page[page.length - 1];
          cursor = last && { seq: last.seq };
        }
        expect(paged).toEqual(whole);
      }
    });
  });

  it("scanBranchStructure is scanBranch without payload, for every scan shape", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      const scans: StorageBranchScan[] = [
        { start: t.m6.id },
        { start: t.m6.id, order: "oldestFirst" },
        { start: t.m6.id, stopAtType: "compaction", type: "message" },
        { start: t.m6.id, order: "oldestFirst", stopAtType: "compaction" },
        { start: t.m8.id, customType: "other" },
        { start: t.m6.id, cursor: { seq: t.seq(t.m4) }, limit: 2 },
      ];
      for (const scan of scans) {
        const full = storage.scanBranch(scan);
        const structure = storage.scanBranchStructure(scan);
        expect(structure).toStrictEqual(full.map(structureOf));
      }
      const all = storage.scanBranchStructure({ start: t.m6.id });
      expect(all).toHaveLength(10);
      for (const row of all) {
        for (const payloadKey of ["message", "summary", "data", "retainedTail", "fromId"]) expect(row).not.toHaveProperty(payloadKey);
      }
      expect(all.find((row) => row.id === t.n1.id)).toHaveProperty("customType", "note");
    });
  });
});

describe("scanEntries and getEntries", () => {
  it("scanEntries filters by type/customType/fromSeq/toSeq across all branches, in either order, with a limit", async () => {
    await withStorage((storage) => {
      const t = buildTree(storage);
      const all = storage.scanEntries();
      expect(all).toHaveLength(13);
      expect(all.map((e) => e.seq)).toEqual([...all.map((e) => e.seq)].sort((a, b) => a - b));
      expect(ids(storage.scanEntries({ order: "desc" }))).toEqual(ids(all).reverse());
      expect(ids(storage.scanEntries({ type: "compaction" }))).toEqual(idsOf([t.c1, t.c2]));
      expect(ids(storage.scanEntries({ type: "custom" }))).toEqual(idsOf([t.n1, t.n2]));
      expect(ids(storage.scanEntries({ customType: "other" }))).toEqual([t.n2.id]);
      expect(ids(storage.scanEntries({ type: "custom", customType: "note" }))).toEqual([t.n1.id]);
      expect(storage.scanEntries({ type: "message" })).toHaveLength(8);
      expect(ids(storage.scanEntries({ type: "message", order: "desc", limit: 2 }))).toEqual(ids(all.filter((e) => e.type === "message").slice(-2).reverse()));
      const [, second, third, fourth] = all;
      const from = second?.seq ?? 0;
      const to = fourth?.seq ?? 0;
      expect(ids(storage.scanEntries({ fromSeq: from, toSeq: to }))).toEqual(ids([second, third, fourth].filter((e) => e !== undefined)));
      expect(ids(storage.scanEntries({ fromSeq: from, limit: 1 }))).toEqual(ids([second].filter((e) => e !== undefined)));
      expect(storage.scanEntries({ fromSeq: (all[12]?.seq ?? 0) + 1 })).toEqual([]);
      expect(() => storage.scanEntries({ limit: 0 })).toThrow(RangeError);
    });
  });

  it("getEntries reads 250 ids in one call despite the bound-parameter limit, ignoring unknown and repeated ids", async () => {
    await withStorage((storage) => {
      const chain: NewEntry[] = [];
      for (let i = 0; i < 250; i++) {
        const parent = chain[i - 1]?.id ?? null;
        chain.push(i % 5 === 4 ? customEntry(parent, "step", { i }) : messageEntry(parent, userMessage(`m${i}`)));
      }
      storage.commit(chain.map(insertEntry));
      const wanted = [...idsOf(chain), "00000000-0000-7000-8000-000000000000", ...idsOf(chain).slice(0, 20)];
      const found = storage.getEntries(wanted);
      expect(found.size).toBe(250);
      chain.forEach((entry, index) => {
        const stored = found.get(entry.id);
        expect(stored?.parentId).toBe(entry.parentId);
        if (index % 5 === 4) expect(stored).toMatchObject({ type: "custom", customType: "step", data: { i: index } });
        else expect(stored).toMatchObject({ type: "message", message: { role: "user", content: `m${index}` } });
      });
      expect(storage.getEntries([]).size).toBe(0);
      expect(storage.scanBranch({ start: chain[249]?.id ?? "" })).toHaveLength(250);
    });
  });
});
