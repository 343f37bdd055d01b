import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrate } from "../../durable-objects/sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../../durable-objects/session/storage/session-migrations.ts";
import { SqlSessionStorage, UNSTORED_MESSAGES_MAX, UNSTORED_USAGE_ROWS_MAX } from "../../durable-objects/session/storage/sql-session-storage.ts";
import { value } from "../../harness/session/addresses.ts";
import { insertEntry, insertUsage, setValue } from "../../harness/session/writes.ts";
import { assistantMessage, messageEntry, objectStub, uniqueObjectName, usageOf, usageRow, withStorage } from "../helpers/storage.ts";

// Issue 33 item 2 (QUALITY P12, rows written per turn): the counters row is a checkpoint, not
// rewritten by every commit nor by every ledger row; a restarted object recovers the message count
// and the usage totals from the entries and ledger rows after it, continues its seqs at the stored
// limit and never reuses one.

type CountersRow = { next_seq: number; message_count: number; counted_through: number; usage: string };
const countersRow = (state: DurableObjectState): CountersRow =>
  state.storage.sql.exec<CountersRow>("SELECT next_seq, message_count, counted_through, usage FROM counters").one();

describe("the counters checkpoint", () => {
  it("commits leave the row alone, ledger rows included; opening adds up the ledger rows after it", async () => {
    await withStorage((storage, state) => {
      // A new session's first commit stores the row: it uses the first seq, the stored limit.
      storage.commit([setValue(value("app", "created"), true)]);
      const before = countersRow(state);
      const user = messageEntry(null);
      storage.commit([insertEntry(user), setValue(value("pi.branch.tip", "main"), user.id)]);
      storage.commit([setValue(value("app", "state"), { leaf: "effect" })]);
      const reply = messageEntry(user.id, assistantMessage("hello", usageOf({ input: 3, output: 2 })));
      storage.commit([insertEntry(reply), insertUsage(usageRow(usageOf({ input: 3, output: 2 }), { entryId: reply.id }))]);
      storage.commit([insertUsage(usageRow(usageOf({ input: 1, output: 1 })))]);
      // The settling commits wrote their ledger rows and nothing more.
      expect(countersRow(state)).toEqual(before);
      expect(storage.getStats()).toMatchObject({ messageCount: 2, usage: { input: 4, output: 3 } });
      // A restarted object counts the messages and adds up the ledger rows committed since.
      const reopened = SqlSessionStorage.open(state.storage);
      expect(reopened?.getStats()).toStrictEqual(storage.getStats());
    });
  });

  it("stores the row with the totals once the ledger rows after it reach their bound", async () => {
    await withStorage((storage, state) => {
      storage.commit([setValue(value("app", "created"), true)]);
      for (let index = 0; index < UNSTORED_USAGE_ROWS_MAX - 1; index++) storage.commit([insertUsage(usageRow(usageOf({ input: 1, output: 2 })))]);
      expect(JSON.parse(countersRow(state).usage)).not.toMatchObject({ input: UNSTORED_USAGE_ROWS_MAX - 1 });
      const last = storage.commit([insertUsage(usageRow(usageOf({ input: 1, output: 2 })))]);
      const stored = countersRow(state);
      expect(stored.counted_through).toBe(Math.max(...last.seqs));
      expect(JSON.parse(stored.usage)).toMatchObject({ input: UNSTORED_USAGE_ROWS_MAX, output: 2 * UNSTORED_USAGE_ROWS_MAX });
      // And one more after it: the totals are the stored ones plus that row.
      storage.commit([insertUsage(usageRow(usageOf({ input: 5, output: 0 })))]);
      expect(SqlSessionStorage.open(state.storage)?.getStats().usage).toMatchObject({ input: UNSTORED_USAGE_ROWS_MAX + 5, output: 2 * UNSTORED_USAGE_ROWS_MAX });
    });
  });

  it("a restart between unstored commits keeps the exact message count and never reuses a seq", async () => {
    await withStorage((storage, state) => {
      let parent: string | null = null;
      const seqs: number[] = [];
      for (let index = 0; index < 5; index++) {
        const entry = messageEntry(parent);
        seqs.push(...storage.commit([insertEntry(entry)]).seqs);
        parent = entry.id;
      }
      // The object dies: a new instance reads what SQL holds.
      const reopened = SqlSessionStorage.open(state.storage);
      if (!reopened) throw new Error("the session is gone");
      expect(reopened.getStats()).toStrictEqual(storage.getStats());
      expect(reopened.getStats().messageCount).toBe(5);
      const next = reopened.commit([insertEntry(messageEntry(parent))]);
      expect(next.seqs[0]).toBeGreaterThan(Math.max(...seqs));
      expect(reopened.getStats().messageCount).toBe(6);
      // And once more, after the reopened instance stored nothing either.
      expect(SqlSessionStorage.open(state.storage)?.getStats().messageCount).toBe(6);
    });
  });

  it("stores the row when the uncounted messages reach their bound, and when the seqs reach the stored limit", async () => {
    await withStorage((storage, state) => {
      storage.commit([setValue(value("app", "created"), true)]);
      let parent: string | null = null;
      for (let index = 0; index < UNSTORED_MESSAGES_MAX - 1; index++) {
        const entry = messageEntry(parent);
        storage.commit([insertEntry(entry)]);
        parent = entry.id;
      }
      expect(countersRow(state).message_count).toBe(0);
      storage.commit([insertEntry(messageEntry(parent))]);
      expect(countersRow(state).message_count).toBe(UNSTORED_MESSAGES_MAX);

      const limit = countersRow(state).next_seq;
      const writes = Array.from({ length: limit - storage.nextSeq + 1 }, (_, index) => setValue(value("app.fill", `k${index}`), index));
      const crossing = storage.commit(writes);
      expect(Math.max(...crossing.seqs)).toBe(limit);
      expect(countersRow(state).next_seq).toBeGreaterThan(limit);
      const reopened = SqlSessionStorage.open(state.storage);
      expect(reopened?.nextSeq).toBeGreaterThan(limit);
    });
  });
});

describe("session migrations 13 and 14 (keyed tables, counters checkpoint)", () => {
  it("carry values, schedule rows, outbox rows, counters and usage totals over unchanged", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("lean_rows")), (_instance, state) => {
      const sql = state.storage.sql;
      const before = SESSION_MIGRATIONS.findIndex((migration) => migration.name === "keyed_tables");
      migrate(state.storage, SESSION_MIGRATIONS.slice(0, before));
      // A session as migration 12's build left it.
      sql.exec("INSERT INTO meta (singleton, session_id, tenant_id, created_at, storage_version, parent_session_id, usage) VALUES (1, 's', 't', 1, 1, NULL, ?)", JSON.stringify({ input: 7, output: 4 }));
      sql.exec("INSERT INTO counters (singleton, next_seq, message_count) VALUES (1, 12, 3)");
      sql.exec("INSERT INTO vals (namespace, key, seq, chunks, value) VALUES ('app', 'k', 5, 0, '\"v\"')");
      sql.exec("INSERT INTO due_work (operation_id, lane, due_at) VALUES ('op-due', 'main', 100)");
      sql.exec("INSERT INTO settlement_outbox (operation_id, lane, settled_at, forward_at, reservation_id) VALUES ('op-out', 'main', 50, 60, 'rsv_1')");

      migrate(state.storage, SESSION_MIGRATIONS);
      const definitions = sql.exec<{ name: string; sql: string }>("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN ('vals', 'due_work', 'settlement_outbox')").toArray();
      expect(definitions).toHaveLength(3);
      for (const definition of definitions) expect(definition.sql).toMatch(/WITHOUT ROWID/);
      expect(sql.exec("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'due_work_by_time'").toArray()).toEqual([]);
      expect(sql.exec("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'vals' ORDER BY name").toArray()).toEqual([
        { name: "vals_release_chunks_on_delete" },
        { name: "vals_release_chunks_on_update" },
      ]);
      expect(sql.exec("SELECT operation_id, lane, due_at FROM due_work").toArray()).toEqual([{ operation_id: "op-due", lane: "main", due_at: 100 }]);
      expect(sql.exec("SELECT operation_id, reservation_id FROM settlement_outbox").toArray()).toEqual([{ operation_id: "op-out", reservation_id: "rsv_1" }]);
      expect(countersRow(state)).toEqual({ next_seq: 12, message_count: 3, counted_through: 11, usage: JSON.stringify({ input: 7, output: 4 }) });

      const storage = SqlSessionStorage.open(state.storage);
      expect(storage?.getValue(value("app", "k"))?.value).toBe("v");
      expect(storage?.getStats()).toMatchObject({ messageCount: 3, usage: { input: 7, output: 4 } });
      expect(storage?.nextSeq).toBe(12);
    });
  });
});
