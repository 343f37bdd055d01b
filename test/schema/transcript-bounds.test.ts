import { describe, expect, it } from "vitest";
import type { Entry } from "../../schema/entries.ts";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import {
  SNAPSHOT_TRANSCRIPT_MAX_BYTES,
  SNAPSHOT_TRANSCRIPT_MAX_ENTRIES,
  boundTranscript,
  entryBytes,
  takeTranscriptTail,
} from "../../schema/transcript-bounds.ts";
import { utf8Length } from "../../schema/utf8.ts";
import { LANE, compactionEntry, fold, idleSnapshot } from "./lane-fixtures.ts";

// The bounded transcript of a lane snapshot, and the fold equivalence it must keep: folding
// entry_added events over a bounded snapshot gives exactly the bounded tail of the whole transcript.

const KIB = 1024;

function blob(id: string, parentId: string | null, bytes: number): Entry {
  return { id, parentId, seq: 1, timestamp: 100, type: "custom", customType: "blob", data: "x".repeat(bytes) };
}

/** A deterministic pseudo-random sequence (mulberry32). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a fresh capture of `branch` (oldest first) holds: the bounded tail back to the newest compaction. */
function capture(branch: Entry[]): LaneSnapshot {
  const newestFirst: Entry[] = [];
  for (let i = branch.length - 1; i >= 0; i--) {
    const entry = branch[i];
    if (!entry) break;
    newestFirst.push(entry);
    if (entry.type === "compaction") break;
  }
  const { transcript, olderEntries } = takeTranscriptTail(newestFirst);
  return idleSnapshot({ tipId: branch.at(-1)?.id ?? null, transcript, ...(olderEntries && { olderEntries }) });
}

describe("snapshot transcript bounds", () => {
  it("keeps the newest entries up to the count bound and names the newest one left out", () => {
    const branch = Array.from({ length: SNAPSHOT_TRANSCRIPT_MAX_ENTRIES + 5 }, (_, i) => blob(`e${i}`, i === 0 ? null : `e${i - 1}`, 10));
    const tail = takeTranscriptTail([...branch].reverse());
    expect(tail.transcript).toEqual(branch.slice(5));
    expect(tail.olderEntries).toEqual({ start: "e4" });
  });

  it("keeps the newest entries up to the byte bound; an entry larger than the bound alone leaves an empty tail", () => {
    const big = blob("big", null, SNAPSHOT_TRANSCRIPT_MAX_BYTES);
    const small = blob("small", "big", 10);
    expect(takeTranscriptTail([small, big])).toEqual({ transcript: [small], olderEntries: { start: "big" } });
    expect(takeTranscriptTail([big])).toEqual({ transcript: [], olderEntries: { start: "big" } });
    const quarter = (id: string, parentId: string | null) => blob(id, parentId, SNAPSHOT_TRANSCRIPT_MAX_BYTES / 4 - 200);
    const four = [quarter("q0", null), quarter("q1", "q0"), quarter("q2", "q1"), quarter("q3", "q2")];
    expect(takeTranscriptTail([...four].reverse())).toEqual({ transcript: four });
    const five = [...four, quarter("q4", "q3")];
    expect(takeTranscriptTail([...five].reverse())).toEqual({ transcript: five.slice(1), olderEntries: { start: "q0" } });
  });

  it("pulls no entry past the first one that does not fit", () => {
    let pulled = 0;
    function* newestFirst(): Generator<Entry> {
      for (let i = 0; i < 10_000; i++) {
        pulled++;
        yield blob(`e${i}`, `e${i + 1}`, 10);
      }
    }
    takeTranscriptTail(newestFirst());
    expect(pulled).toBe(SNAPSHOT_TRANSCRIPT_MAX_ENTRIES + 1);
  });

  it("measures an entry as the UTF-8 length of its JSON", () => {
    const entry: Entry = { id: "e", parentId: null, seq: 1, timestamp: 100, type: "custom", customType: "blob", data: "é€😀" };
    expect(entryBytes(entry)).toBe(new TextEncoder().encode(JSON.stringify(entry)).byteLength);
    const next = random(7);
    for (let n = 0; n < 200; n++) {
      const text = Array.from({ length: 40 }, () => String.fromCharCode(Math.floor(next() * 0x10000))).join("");
      expect(utf8Length(text)).toBe(new TextEncoder().encode(text).byteLength);
    }
  });

  it("boundTranscript drops the oldest entries of a grown transcript, and keeps what was already left out otherwise", () => {
    const entries = Array.from({ length: SNAPSHOT_TRANSCRIPT_MAX_ENTRIES + 1 }, (_, i) => blob(`e${i}`, null, 10));
    expect(boundTranscript(entries, { start: "older" })).toEqual({ transcript: entries.slice(1), olderEntries: { start: "e0" } });
    expect(boundTranscript(entries.slice(1), { start: "older" })).toEqual({ transcript: entries.slice(1), olderEntries: { start: "older" } });
    expect(boundTranscript(entries.slice(1), undefined)).toEqual({ transcript: entries.slice(1) });
  });

  it("folding entry_added over a bounded snapshot equals a fresh bounded capture, past both bounds and across compactions", () => {
    const next = random(42);
    const branch: Entry[] = [];
    const sizes = [10, 100, 2 * KIB, 64 * KIB, 512 * KIB, SNAPSHOT_TRANSCRIPT_MAX_BYTES + 1];
    let watched = capture(branch);
    let checks = 0;
    for (let i = 0; i < 600; i++) {
      const parentId = branch.at(-1)?.id ?? null;
      const roll = next();
      const entry = roll < 0.01 ? compactionEntry(`c${i}`, parentId) : blob(`e${i}`, parentId, sizes[Math.floor(next() * next() * sizes.length)] ?? 10);
      branch.push(entry);
      const event: HarnessEvent = { type: "entry_added", lane: LANE, entry };
      watched = fold(watched, [event]);
      if (i % 7 === 0 || i > 590) {
        expect(watched).toStrictEqual(capture(branch));
        checks++;
      }
      // Now and then a watcher reconnects: it starts again from a fresh capture.
      if (next() < 0.02) watched = capture(branch);
    }
    expect(checks).toBeGreaterThan(80);
    expect(watched.olderEntries).toBeDefined();
  });
});
