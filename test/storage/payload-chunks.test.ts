import { describe, expect, it } from "vitest";
import { CHUNK_BYTES, INLINE_LIMIT, PAYLOAD_LIMIT } from "../../durable-objects/session/storage/payload-codec.ts";
import { list, value } from "../../harness/session/addresses.ts";
import { PayloadTooLarge } from "../../harness/session/errors.ts";
import type { Write } from "../../harness/session/storage.ts";
import { appendList, deleteList, deleteValue, insertEntry, insertUsage, setValue } from "../../harness/session/writes.ts";
import type { Entry } from "../../schema/entries.ts";
import { toWire } from "../../schema/wire.ts";
import { createSession, failure, unwrap } from "../helpers/sessions.ts";
import {
  chunkRowCount,
  dumpTables,
  messageEntry,
  orphanChunkCount,
  usageRow,
  userMessage,
  withStorage,
} from "../helpers/storage.ts";

const MiB = 1024 * 1024;
const utf8Bytes = (text: string): number => new TextEncoder().encode(text).byteLength;

function contentOf(entry: Entry | undefined): string | undefined {
  if (entry?.type !== "message" || entry.message.role !== "user") return undefined;
  return typeof entry.message.content === "string" ? entry.message.content : undefined;
}

/** True when the stored payload of `seq` is split in the middle of a multi-byte UTF-8 character. */
function splitsACharacter(state: DurableObjectState, seq: number): boolean {
  const firstBytes = state.storage.sql
    .exec<{ data: ArrayBuffer }>("SELECT data FROM payload_chunks WHERE seq = ? AND idx > 0 ORDER BY idx", seq)
    .toArray()
    .map((row) => new Uint8Array(row.data)[0] ?? 0);
  return firstBytes.some((byte) => byte >= 0x80 && byte < 0xc0);
}

describe("payloads above the inline limit are chunked transparently (ARCHITECTURE D5)", () => {
  it("an entry of ~5 MiB round-trips through getEntries, scanEntries and scanBranch", async () => {
    await withStorage((storage, state) => {
      const text = "0123456789abcdef".repeat((5 * MiB) / 16);
      const root = messageEntry(null, userMessage("small"));
      const big = messageEntry(root.id, userMessage(text));
      const result = storage.commit([insertEntry(root), insertEntry(big)]);
      const bigSeq = result.seqs[1] ?? -1;
      expect(chunkRowCount(state, result.seqs[0])).toBe(0);
      expect(chunkRowCount(state, bigSeq)).toBe(Math.ceil((5 * MiB + 60) / CHUNK_BYTES));
      const stored = state.storage.sql.exec<{ payload: string | null }>("SELECT payload FROM entries WHERE seq = ?", bigSeq).one();
      expect(stored.payload).toBeNull();
      expect(contentOf(storage.getEntries([big.id]).get(big.id)) === text).toBe(true);
      expect(contentOf(storage.scanEntries({ fromSeq: bigSeq })[0]) === text).toBe(true);
      const [tip, parent] = storage.scanBranch({ start: big.id });
      expect(contentOf(tip) === text).toBe(true);
      expect(contentOf(parent)).toBe("small");
      expect(storage.getEntries([big.id]).get(big.id)).toMatchObject({ id: big.id, parentId: root.id, seq: bigSeq, type: "message" });
    });
  });

  it("multi-byte UTF-8 and emoji split across chunk boundaries decode intact", async () => {
    await withStorage((storage, state) => {
      const text = "a\u00e9\u20ac\u{1F600}".repeat(350_000) + "\u{1F469}\u200D\u{1F4BB}";
      expect(utf8Bytes(text)).toBeGreaterThan(3 * MiB);
      const entry = messageEntry(null, userMessage(text));
      const result = storage.commit([insertEntry(entry)]);
      expect(chunkRowCount(state, result.firstSeq)).toBeGreaterThan(3);
      expect(splitsACharacter(state, result.firstSeq)).toBe(true);
      expect(contentOf(storage.getEntries([entry.id]).get(entry.id)) === text).toBe(true);
      // A value just under the inline limit in bytes, but over it in the 3-bytes-per-unit estimate, stays inline.
      const euros = "\u20ac".repeat(Math.floor((INLINE_LIMIT - 2) / 3));
      const inline = storage.commit([setValue(value<string>("app.euro"), euros)]);
      expect(chunkRowCount(state, inline.firstSeq)).toBe(0);
      expect(storage.getValue(value<string>("app.euro"))?.value === euros).toBe(true);
    });
  });

  it("an entry of ~15.9 MiB is accepted and reads back intact", async () => {
    await withStorage((storage, state) => {
      const text = "z".repeat(Math.floor(15.9 * MiB));
      const entry = messageEntry(null, userMessage(text));
      const result = storage.commit([insertEntry(entry)]);
      expect(chunkRowCount(state, result.firstSeq)).toBe(16);
      expect(contentOf(storage.getEntries([entry.id]).get(entry.id)) === text).toBe(true);
      expect(result.stats.messageCount).toBe(1);
    });
  });

  it("a chunked value can be replaced by a small one or another chunked one and deleted, leaving no orphan chunks", async () => {
    await withStorage((storage, state) => {
      const address = value<{ blob: string }>("app.blob", "k");
      const big = (fill: string) => ({ blob: fill.repeat(3 * MiB) });
      const first = storage.commit([setValue(address, big("a"))]);
      expect(chunkRowCount(state, first.firstSeq)).toBe(4);
      expect(storage.getValue(address)?.value.blob === big("a").blob).toBe(true);

      const small = storage.commit([setValue(address, { blob: "tiny" })]);
      expect(storage.getValue(address)).toEqual({ address, value: { blob: "tiny" }, seq: small.firstSeq });
      expect(chunkRowCount(state)).toBe(0);

      storage.commit([setValue(address, big("b"))]);
      const second = storage.commit([setValue(address, big("c"))]);
      expect(storage.getValue(address)?.value.blob === big("c").blob).toBe(true);
      expect(chunkRowCount(state)).toBe(chunkRowCount(state, second.firstSeq));
      expect(orphanChunkCount(state)).toBe(0);

      // Twice in one commit, and through scanValues.
      const twice = storage.commit([setValue(address, big("d")), setValue(address, big("e"))]);
      expect(chunkRowCount(state)).toBe(chunkRowCount(state, twice.seqs[1]));
      expect(storage.scanValues(value<{ blob: string }>("app.blob", ""))[0]?.value.blob === big("e").blob).toBe(true);

      storage.commit([deleteValue(address)]);
      expect(storage.getValue(address)).toBeUndefined();
      expect(chunkRowCount(state)).toBe(0);
      storage.commit([setValue(address, big("f")), deleteValue(address)]);
      expect(chunkRowCount(state)).toBe(0);
      expect(orphanChunkCount(state)).toBe(0);
    });
  });

  it("a chunked list element round-trips, and a list delete removes its chunks", async () => {
    await withStorage((storage, state) => {
      const frames = list<string>("app.frames", "r1");
      const keep = list<string>("app.frames", "r2");
      const big = "\u{1F600}x".repeat(MiB);
      const result = storage.commit([appendList(frames, "small"), appendList(frames, big), appendList(keep, big)]);
      const elements = storage.readList(frames);
      expect(elements.map((e) => e.seq)).toEqual(result.seqs.slice(0, 2));
      expect(elements[0]?.value).toBe("small");
      expect(elements[1]?.value === big).toBe(true);
      expect(storage.readList(frames, { order: "desc", limit: 1 })[0]?.value === big).toBe(true);
      const keepChunks = chunkRowCount(state, result.seqs[2]);
      expect(keepChunks).toBeGreaterThan(1);
      storage.commit([deleteList(frames)]);
      expect(storage.readList(frames)).toEqual([]);
      expect(chunkRowCount(state, result.seqs[1])).toBe(0);
      expect(chunkRowCount(state)).toBe(keepChunks);
      expect(storage.readList(keep)[0]?.value === big).toBe(true);
      expect(orphanChunkCount(state)).toBe(0);
    });
  });
});

describe("payloads above 16 MiB are refused before anything is written", () => {
  it("throws PayloadTooLarge (never SQLITE_TOOBIG) and leaves seq, stats and every table unchanged", async () => {
    await withStorage((storage, state) => {
      const root = messageEntry(null);
      storage.commit([insertEntry(root), setValue(value<number>("app.n"), 1)]);
      const huge = "y".repeat(PAYLOAD_LIMIT + 1);
      // Under the limit in UTF-16 units, over it in UTF-8 bytes.
      const hugeMultibyte = "\u20ac".repeat(6 * MiB);
      const oversized: [string, Write][] = [
        ["entry", insertEntry(messageEntry(root.id, userMessage(huge)))],
        ["multi-byte entry", insertEntry(messageEntry(root.id, userMessage(hugeMultibyte)))],
        ["value", setValue(value<string>("app.big"), huge)],
        ["list element", appendList(list<string>("app.big"), huge)],
        ["usage details (ledger rows are never chunked)", insertUsage(usageRow(undefined, { details: { blob: "d".repeat(INLINE_LIMIT) } }))],
      ];
      for (const [label, write] of oversized) {
        const before = dumpTables(state);
        const stats = storage.getStats();
        const seq = storage.nextSeq;
        const batch = [insertEntry(messageEntry(root.id)), setValue(value<number>("app.n"), 2), appendList(list<number>("app.l"), 1), write];
        let thrown: unknown;
        try {
          storage.commit(batch);
        } catch (error) {
          thrown = error;
        }
        expect(thrown, label).toBeInstanceOf(PayloadTooLarge);
        if (thrown instanceof PayloadTooLarge) {
          expect(thrown.bytes, label).toBeGreaterThan(thrown.limit);
          expect(thrown.message, label).not.toMatch(/TOOBIG/i);
        }
        expect(dumpTables(state), label).toEqual(before);
        expect(storage.getStats(), label).toStrictEqual(stats);
        expect(storage.nextSeq, label).toBe(seq);
      }
      expect(storage.getValue(value<number>("app.n"))?.value).toBe(1);
      const after = storage.commit([insertEntry(messageEntry(root.id))]);
      expect(after.stats.messageCount).toBe(2);
    });
  });

  it("through the SessionObject RPC: an oversized setValue answers PayloadTooLarge and the session keeps working", async () => {
    const { stub } = await createSession("toolarge");
    const error = failure(await stub.setValue("app", "big", toWire("q".repeat(PAYLOAD_LIMIT + 16))));
    expect(error.code).toBe("PayloadTooLarge");
    expect(error.details).toMatchObject({ limit: PAYLOAD_LIMIT });
    expect(unwrap(await stub.getValue("app", "big"))).toBeNull();
    const ok = unwrap(await stub.setValue("app", "big", toWire("fits")));
    expect(unwrap(await stub.getValue("app", "big"))).toEqual({ value: "fits", seq: ok.seq });
  });
});
