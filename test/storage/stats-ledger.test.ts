import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import { list, value } from "../../harness/session/addresses.ts";
import type { Write } from "../../harness/session/storage.ts";
import { addUsage, zeroUsage } from "../../harness/session/usage.ts";
import { appendList, insertEntry, insertUsage, setValue } from "../../harness/session/writes.ts";
import type { SessionStats, Usage } from "../../schema/usage.ts";
import {
  assistantMessage,
  branchSummaryEntry,
  compactionEntry,
  customEntry,
  messageEntry,
  objectStub,
  seededRandom,
  uniqueObjectName,
  usageOf,
  usageRow,
  userMessage,
  withStorage,
} from "../helpers/storage.ts";

/** The ledger as the single source of truth: message entries counted, usage rows folded in seq order. */
function ledgerStats(storage: SqlSessionStorage): SessionStats {
  return {
    messageCount: storage.scanEntries({ type: "message" }).length,
    usage: storage.scanUsage().reduce((total, row) => addUsage(total, row.usage), zeroUsage()),
  };
}

function randomUsage(random: () => number): Usage {
  const pick = (scale: number) => Math.floor(random() * scale);
  const price = () => Math.round(random() * 1e6) / 3e7; // fractional, not exactly representable
  const input = pick(5000);
  const output = pick(2000);
  const cacheRead = pick(1000);
  const cacheWrite = pick(500);
  const cost = { input: price(), output: price(), cacheRead: price(), cacheWrite: price(), total: 0 };
  cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
  return {
    input,
    output,
    cacheRead,
    cacheWrite,
    totalTokens: input + output + cacheRead + cacheWrite,
    ...(random() < 0.3 && { cacheWrite1h: pick(300) }),
    ...(random() < 0.4 && { reasoning: pick(800) }),
    cost,
  };
}

describe("SessionStats is a projection of the usage ledger (reference §1.7)", () => {
  it("equals the ledger fold after every one of 200 randomized commits, and survives reopening", async () => {
    const name = uniqueObjectName("ledger");
    const final = await withStorage(
      (storage, state) => {
        const random = seededRandom(0x5eed);
        const entryIds: string[] = [];
        let expectedMessages = 0;
        const parent = () => (entryIds.length === 0 || random() < 0.05 ? null : (entryIds[Math.floor(random() * entryIds.length)] ?? null));
        for (let commit = 0; commit < 200; commit++) {
          const writes: Write[] = [];
          const size = 1 + Math.floor(random() * 5);
          for (let w = 0; w < size; w++) {
            const roll = random();
            if (roll < 0.45) {
              const kind = Math.floor(random() * 6);
              const entry =
                kind === 0
                  ? messageEntry(parent(), userMessage(`u${commit}`))
                  : kind === 1
                    ? // An assistant message's own usage is payload, not ledger: it must not count.
                      messageEntry(parent(), assistantMessage(`a${commit}`, randomUsage(random)))
                    : kind === 2
                      ? compactionEntry(parent())
                      : kind === 3
                        ? branchSummaryEntry(parent())
                        : kind === 4
                          ? customEntry(parent(), "note", { commit })
                          : customEntry(parent(), "bare");
              if (entry.type === "message") expectedMessages++;
              entryIds.push(entry.id);
              writes.push(insertEntry(entry));
            } else if (roll < 0.8) {
              const entryId = entryIds.length > 0 && random() < 0.5 ? entryIds[entryIds.length - 1] : undefined;
              writes.push(
                insertUsage(
                  usageRow(randomUsage(random), {
                    adjustment: random() < 0.2,
                    ...(entryId !== undefined && { entryId }),
                    ...(random() < 0.3 && { details: { commit, source: "random" } }),
                  }),
                ),
              );
            } else if (roll < 0.9) {
              writes.push(setValue(value<number>("app.v", `k${Math.floor(random() * 10)}`), commit));
            } else {
              writes.push(appendList(list<number>("app.l"), commit));
            }
          }
          const result = storage.commit(writes);
          const expected = ledgerStats(storage);
          expect(expected.messageCount).toBe(expectedMessages);
          expect(result.stats).toStrictEqual(expected);
          expect(storage.getStats()).toStrictEqual(expected);
        }
        const stats = storage.getStats();
        // The sequence exercised what it claims to: optional counters, fractional costs, many rows.
        expect(storage.scanUsage().length).toBeGreaterThan(100);
        expect(stats.usage.cacheWrite1h).toBeGreaterThan(0);
        expect(stats.usage.reasoning).toBeGreaterThan(0);
        expect(Number.isInteger(stats.usage.cost.total)).toBe(false);
        const reopened = SqlSessionStorage.open(state.storage);
        expect(reopened?.getStats()).toStrictEqual(stats);
        // A reopened session continues at the stored limit (SEQ_RESERVE): never below a seq in use.
        expect(reopened?.nextSeq).toBeGreaterThanOrEqual(storage.nextSeq);
        return stats;
      },
      { name },
    );
    await runInDurableObject(objectStub(name), (_instance, state) => {
      const reopened = SqlSessionStorage.open(state.storage);
      expect(reopened).toBeDefined();
      if (!reopened) return;
      expect(reopened.getStats()).toStrictEqual(final);
      expect(ledgerStats(reopened)).toStrictEqual(final);
      // And it keeps counting from there.
      const row = usageRow(usageOf({ input: 1, totalTokens: 1 }, { input: 0.001, total: 0.001 }));
      const result = reopened.commit([insertUsage(row), insertEntry(messageEntry(null))]);
      expect(result.stats).toStrictEqual({ messageCount: final.messageCount + 1, usage: addUsage(final.usage, row.usage) });
      expect(result.stats).toStrictEqual(ledgerStats(reopened));
    });
  });

  it("counts only message entries and only ledger rows; optional counters appear once a row reports them", async () => {
    await withStorage((storage) => {
      const root = messageEntry(null, assistantMessage("paid", usageOf({ input: 100, totalTokens: 100 }, { input: 1, total: 1 })));
      const first = storage.commit([insertEntry(root), insertEntry(compactionEntry(root.id)), insertEntry(customEntry(root.id, "c"))]);
      expect(first.stats).toStrictEqual({ messageCount: 1, usage: zeroUsage() });
      const plain = storage.commit([insertUsage(usageRow(usageOf({ input: 10, totalTokens: 10 }, { input: 0.1, total: 0.1 })))]);
      expect(plain.stats.usage).not.toHaveProperty("cacheWrite1h");
      expect(plain.stats.usage).not.toHaveProperty("reasoning");
      const rich = storage.commit([
        insertUsage(usageRow({ ...usageOf({ output: 5, totalTokens: 5 }, { output: 0.2, total: 0.2 }), cacheWrite1h: 7, reasoning: 3 })),
        insertUsage(usageRow(usageOf({ input: 1, totalTokens: 1 }), { adjustment: true })),
      ]);
      expect(rich.stats.usage).toMatchObject({ input: 11, output: 5, totalTokens: 16, cacheWrite1h: 7, reasoning: 3 });
      expect(rich.stats.usage.cost.total).toBe(0.1 + 0.2);
      expect(rich.stats).toStrictEqual(ledgerStats(storage));
      // Ledger rows read back exactly as written.
      const rows = storage.scanUsage();
      expect(rows.map((r) => r.adjustment)).toEqual([false, false, true]);
      expect(storage.scanUsage({ order: "desc", limit: 1 })[0]?.seq).toBe(rich.seqs[1]);
      expect(storage.scanUsage({ fromSeq: rich.firstSeq }).map((r) => r.seq)).toEqual(rich.seqs);
      expect(storage.scanUsage({ toSeq: plain.firstSeq }).map((r) => r.seq)).toEqual([plain.firstSeq]);
    });
  });
});
