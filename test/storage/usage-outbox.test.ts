import { describe, expect, it } from "vitest";
import { FORWARD_RETRY_MS } from "../../durable-objects/session/due-work/settlement-outbox.ts";
import { STORED_MARK_LAG, UsageOutbox } from "../../durable-objects/session/due-work/usage-outbox.ts";
import { value } from "../../harness/session/addresses.ts";
import { insertUsage, setValue } from "../../harness/session/writes.ts";
import { usageOf, usageRow, withStorage } from "../helpers/storage.ts";

// The session's usage outbox (issue 30 item 6c): the ledger rows past the seq the tenant
// acknowledged are told again until acknowledged, and a failed forward keeps the alarm armed to
// tell them (`retry_at`). Forwards overlap with commits: the acknowledgment of one forward is
// stored with the session's next commit, which may come after a later forward has failed.

const NOW = 1_800_000_000_000;

describe("the usage outbox", () => {
  it("storing an earlier forward's acknowledgment keeps the retry a later failed forward armed", async () => {
    await withStorage((storage, state) => {
      const outbox = new UsageOutbox(state.storage.sql, () => NOW);
      storage.commit([insertUsage(usageRow(usageOf({ totalTokens: 1 })))]);
      const first = outbox.pending(storage, 50);
      storage.commit([insertUsage(usageRow(usageOf({ totalTokens: 2 })))]);
      // The first forward is applied; the second one, with the newer row, fails.
      outbox.acknowledge(first);
      const second = outbox.pending(storage, 50);
      expect(second.rows).toHaveLength(1);
      outbox.postpone(FORWARD_RETRY_MS);

      // The session's next commit stores the first acknowledgment.
      outbox.persistAcknowledged();

      // The newer row is still untold: the alarm must still come back for it.
      expect(outbox.retryAt()).toBe(NOW + FORWARD_RETRY_MS);
      expect(outbox.pending(storage, 50).rows.map((row) => row.seq)).toEqual(second.rows.map((row) => row.seq));
    });
  });

  it("storing an acknowledgment that covers the whole ledger disarms the retry", async () => {
    await withStorage((storage, state) => {
      const outbox = new UsageOutbox(state.storage.sql, () => NOW);
      storage.commit([insertUsage(usageRow(usageOf({ totalTokens: 1 })))]);
      outbox.postpone(FORWARD_RETRY_MS);
      outbox.acknowledge(outbox.pending(storage, 50));
      outbox.persistAcknowledged();
      expect(outbox.retryAt()).toBeUndefined();
      expect(outbox.pending(storage, 50).rows).toEqual([]);
    });
  });

  it("a retry that finds nothing left to tell (the mark was stored before an eviction) is disarmed", async () => {
    await withStorage((storage, state) => {
      const before = new UsageOutbox(state.storage.sql, () => NOW);
      // A batch of rows: an acknowledgment that far ahead is stored even with no retry armed.
      storage.commit(Array.from({ length: STORED_MARK_LAG }, () => insertUsage(usageRow(usageOf({ totalTokens: 1 })))));
      before.acknowledge(before.pending(storage, STORED_MARK_LAG));
      before.persistAcknowledged();
      before.postpone(FORWARD_RETRY_MS);

      // A fresh instance (the object was evicted) holds no acknowledgment in memory.
      const after = new UsageOutbox(state.storage.sql, () => NOW);
      const pending = after.pending(storage, 50);
      expect(pending).toMatchObject({ rows: [], retrying: true });
      after.acknowledge(pending);
      after.persistAcknowledged();
      expect(after.retryAt()).toBeUndefined();
    });
  });

  it("an acknowledgment less than a batch ahead stays in memory; a restarted object tells those rows again", async () => {
    await withStorage((storage, state) => {
      const stored = () => state.storage.sql.exec<{ forwarded_seq: number }>("SELECT forwarded_seq FROM usage_forward").one().forwarded_seq;
      const outbox = new UsageOutbox(state.storage.sql, () => NOW);
      storage.commit([insertUsage(usageRow(usageOf({ totalTokens: 1 })))]);
      const told = outbox.pending(storage, 50);
      outbox.acknowledge(told);
      outbox.persistAcknowledged();
      expect(stored()).toBe(0);
      // This instance tells nothing twice.
      expect(outbox.pending(storage, 50).rows).toEqual([]);
      // A restarted one tells the row again (the tenant applies it once, by its mark).
      expect(new UsageOutbox(state.storage.sql, () => NOW).pending(storage, 50).rows).toEqual(told.rows);
    });
  });
  it("the mark is stored once a batch of ledger rows is acknowledged, however many seqs the turns between them used", async () => {
    await withStorage((storage, state) => {
      const stored = () => state.storage.sql.exec<{ forwarded_seq: number }>("SELECT forwarded_seq FROM usage_forward").one().forwarded_seq;
      const outbox = new UsageOutbox(state.storage.sql, () => NOW);
      for (let turn = 1; turn <= STORED_MARK_LAG; turn++) {
        // A turn's other writes take seqs too (messages, values): ten of them around each row.
        storage.commit(Array.from({ length: 9 }, (_, index) => setValue(value("app.turn", `t${turn}_${index}`), index)));
        storage.commit([insertUsage(usageRow(usageOf({ totalTokens: 1 })))]);
        outbox.acknowledge(outbox.pending(storage, 50));
        outbox.persistAcknowledged();
        expect(stored() > 0).toBe(turn === STORED_MARK_LAG);
      }
    });
  });
});
