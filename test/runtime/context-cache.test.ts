import { describe, expect, it } from "vitest";
import { appendedMessages, placedBy } from "../../durable-objects/session/appended-messages.ts";
import { ContextCache } from "../../harness/runtime/context-cache.ts";
import { PROMPT_ANSWER_LIMITS } from "../../schema/lane-answers.ts";
import type { Entry } from "../../schema/entries.ts";
import { userMessage } from "../helpers/messages.ts";
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

  it("answers a settled run's messages from memory exactly as from storage, within the same bounds", async () => {
    const result = await withDriveRig(
      async ({ harness, session }) => {
        const lane = await harness.lane("main");
        const answers = [];
        const prompts = [
          "hello",
          "again",
          // More messages than an answer holds: both sources keep the newest and say so.
          Array.from({ length: PROMPT_ANSWER_LIMITS.messages + 3 }, (_, i) => userMessage(`m${i}`)),
        ];
        for (const prompt of prompts) {
          const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt }));
          const record = settledRecord(await lane.drive({ operationId }));
          const placed = placedBy(lane, record);
          answers.push({ warm: placed === undefined ? undefined : appendedMessages(session, record, placed), read: appendedMessages(session, record) });
        }
        return answers;
      },
      { model: ECHO },
    );
    for (const { warm, read } of result) expect(warm).toEqual(read);
    expect(result.map(({ read }) => [read.messages.length, read.messagesTruncated])).toEqual([
      [2, false],
      [2, false],
      [PROMPT_ANSWER_LIMITS.messages, true],
    ]);
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

  it("answers what was placed after a tip only while it holds both tips", () => {
    const cache = new ContextCache();
    cache.read("a", () => [entry("a", null)]);
    cache.placed([entry("b", "a"), entry("c", "b")]);
    expect(cache.since("a", "c")?.map((e) => e.id)).toEqual(["b", "c"]);
    expect(cache.since(null, "c")?.map((e) => e.id)).toEqual(["a", "b", "c"]);
    expect(cache.since("c", "c")).toEqual([]);
    // Not the cached tip, or a start it does not hold: the caller reads storage.
    expect(cache.since("a", "b")).toBeUndefined();
    expect(cache.since("elsewhere", "c")).toBeUndefined();
    // After a compaction the path starts there: a span from before it is not held.
    cache.placed([entry("k", "c", "compaction"), entry("d", "k")]);
    expect(cache.since("k", "d")?.map((e) => e.id)).toEqual(["d"]);
    expect(cache.since("c", "d")).toBeUndefined();
    expect(cache.since(null, "d")).toBeUndefined();
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
