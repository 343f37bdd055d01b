import { describe, expect, it } from "vitest";
import { ContextCache } from "../../harness/runtime/context-cache.ts";
import type { Entry } from "../../schema/entries.ts";
import { ECHO } from "./helpers.ts";
import { settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";

// The warm context of a lane (QUALITY P11): after the first read, requests read no history; what
// the lane holds always equals the bounded path read fresh from storage.

const fresh = (session: { scanBranch: (scan: { start: string; order: "newestFirst"; stopAtType: "compaction" }) => Entry[] }, tipId: string | null): Entry[] =>
  tipId === null ? [] : session.scanBranch({ start: tipId, order: "newestFirst", stopAtType: "compaction" }).reverse();

describe("a lane's warm context", () => {
  it("equals the fresh bounded path after every turn, and warm turns scan no branch", async () => {
    const result = await withDriveRig(
      async ({ harness, session }) => {
        const lane = await harness.lane("main");
        let scans = 0;
        const scan = session.scanBranch.bind(session);
        session.scanBranch = (request) => {
          scans++;
          return scan(request);
        };
        const pairs: { warm: readonly Entry[]; read: Entry[] }[] = [];
        const scansPerTurn: number[] = [];
        for (let turn = 0; turn < 6; turn++) {
          const before = scans;
          const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: `turn ${turn}` }));
          settledRecord(await lane.drive({ operationId }));
          scansPerTurn.push(scans - before);
          // Appends through the lane (idle) extend the warm path too.
          unwrap(await lane.appendCustomEntry("note", { turn }));
          pairs.push({ warm: lane.contextPath(), read: scan({ start: lane.getTipId() ?? "", order: "newestFirst", stopAtType: "compaction" }).reverse() });
        }
        return { pairs, scansPerTurn, length: lane.contextPath().length, expected: fresh(session, lane.getTipId()).length };
      },
      { model: ECHO },
    );
    for (const { warm, read } of result.pairs) expect(warm).toEqual(read);
    expect(result.length).toBe(result.expected);
    // The first request reads the (empty-tipped) path once; every later turn reads none.
    expect(result.scansPerTurn.slice(1)).toEqual([0, 0, 0, 0, 0]);
  });

  it("shares frozen entries: a consumer that mutates what it was handed fails instead of corrupting later requests", async () => {
    const result = await withDriveRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
        settledRecord(await lane.drive({ operationId }));
        const [first] = lane.contextPath();
        let threw = false;
        try {
          if (first?.type === "message") Object.assign(first.message, { role: "assistant" });
        } catch {
          threw = true;
        }
        return { threw, role: first?.type === "message" ? first.message.role : undefined };
      },
      { model: ECHO },
    );
    expect(result.threw).toBe(true);
    expect(result.role).toBe("user");
  });
});

describe("ContextCache", () => {
  const entry = (id: string, parentId: string | null, type: "message" | "compaction" = "message", content: string = id): Entry =>
    type === "message"
      ? { id, parentId, seq: 1, timestamp: 1, type: "message", message: { role: "user", content, timestamp: 1 } }
      : { id, parentId, seq: 1, timestamp: 1, type: "compaction", summary: "s", tokensBefore: 1, retainedTail: [], fromHook: false };

  it("extends a chained placement, starts over at a compaction, and misses on any other tip", () => {
    const cache = new ContextCache();
    let loads = 0;
    const load = (path: Entry[]) => () => {
      loads++;
      return path;
    };
    expect(cache.read("a", load([entry("a", null)])).map((e) => e.id)).toEqual(["a"]);
    cache.placed([entry("b", "a"), entry("c", "b")]);
    expect(cache.read("c", load([])).map((e) => e.id)).toEqual(["a", "b", "c"]);
    cache.placed([entry("k", "c", "compaction"), entry("d", "k")]);
    expect(cache.read("d", load([])).map((e) => e.id)).toEqual(["k", "d"]);
    // A tip the cache did not see move (a navigation) is read again.
    expect(cache.read("b", load([entry("a", null), entry("b", "a")])).map((e) => e.id)).toEqual(["a", "b"]);
    // A placement that does not chain from the cached tip drops the cache.
    cache.placed([entry("x", "elsewhere")]);
    cache.read("x", load([entry("x", null)]));
    expect(loads).toBe(3);
  });

  it("falls back to reading when the path outgrows its byte bound", () => {
    const cache = new ContextCache(200);
    let loads = 0;
    const big = (id: string, parentId: string | null): Entry => entry(id, parentId, "message", "x".repeat(150));
    const path = [big("a", null)];
    cache.read("a", () => (loads++, path));
    cache.placed([big("b", "a")]);
    cache.read("b", () => (loads++, [...path, big("b", "a")]));
    cache.read("b", () => (loads++, [...path, big("b", "a")]));
    expect(loads).toBe(3);
  });
});
