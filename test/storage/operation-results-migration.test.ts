import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrate } from "../../durable-objects/sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../../durable-objects/session/storage/session-migrations.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import { value } from "../../harness/session/addresses.ts";
import { operationResult } from "../../harness/session/builtin-addresses.ts";
import { insertEntry } from "../../harness/session/writes.ts";
import { customEntry, messageEntry, objectStub, rerunMigration, uniqueObjectName } from "../helpers/storage.ts";

// Session migration 8 (QUALITY P3): operation records move from the values table into their own
// `op_results` table, and the entry type index stops holding message entries. A database written
// before it reads the same afterwards.

const BEFORE = SESSION_MIGRATIONS.findIndex((migration) => migration.name === "operation_results");

/**
 * A session as the build before migration 8 left it, as far as the migration reads it: no
 * `op_results` table and the type index over every entry. The session is made by this build (its
 * later migrations changed the tables it writes) and the two are turned back.
 */
function sessionBeforeMigration8(state: DurableObjectState): SqlSessionStorage {
  migrate(state.storage, SESSION_MIGRATIONS);
  const storage = SqlSessionStorage.create(state.storage, { id: "s", tenantId: "t", createdAt: 1 });
  state.storage.sql.exec("DROP TABLE op_results");
  state.storage.sql.exec("DROP INDEX entries_by_type");
  state.storage.sql.exec("CREATE INDEX entries_by_type ON entries (type, custom_type, seq)");
  return storage;
}

describe("migration 8: operation results and the entry type index", () => {
  it("moves stored records into op_results with their seq; a chunked one stays; reads see both unchanged", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("results_migration")), (_instance, state) => {
      expect(BEFORE).toBeGreaterThan(0);
      const earlier = sessionBeforeMigration8(state);
      const full = { kind: "run", status: "completed", fromTipId: null, tipId: "e1", startedAt: 5, endedAt: 9 };
      earlier.commit([{ kind: "value", op: "set", namespace: "app.other", key: "k", value: 1 }]);
      // Rows as the earlier build wrote them (this build writes records to op_results only).
      const firstSeq = 7;
      state.storage.sql.exec("INSERT INTO vals (namespace, key, seq, chunks, value) VALUES ('pi.result', 'op-a', ?, 0, ?)", firstSeq, JSON.stringify(full));
      // A record too large to stay inline was split into chunks; it is read where it is.
      state.storage.sql.exec("INSERT INTO vals (namespace, key, seq, chunks, value) VALUES ('pi.result', 'op-b', 99, 1, NULL)");
      state.storage.sql.exec("INSERT INTO payload_chunks (seq, idx, data) VALUES (99, 0, ?)", new TextEncoder().encode(JSON.stringify({ ...full, tipId: "e2" })).buffer);

      rerunMigration(state.storage, SESSION_MIGRATIONS, "operation_results");
      const moved = state.storage.sql.exec<{ operation_id: string; seq: number; record: string }>("SELECT operation_id, seq, record FROM op_results").toArray();
      expect(moved).toEqual([{ operation_id: "op-a", seq: firstSeq, record: JSON.stringify(full) }]);
      const storage = SqlSessionStorage.open(state.storage);
      expect(storage?.getValue(operationResult("op-a"))).toEqual({ address: operationResult("op-a"), seq: firstSeq, value: full });
      expect(storage?.getValue(operationResult("op-b"))?.value).toEqual({ ...full, tipId: "e2" });
      expect(storage?.scanValues(operationResult("op-")).map((stored) => stored.address.key)).toEqual(["op-a", "op-b"]);
      expect(storage?.getValue(value("app.other", "k"))?.value).toBe(1);
    });
  });

  it("typed entry scans find every type after the type index was rebuilt without messages", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("type_index")), (_instance, state) => {
      const earlier = sessionBeforeMigration8(state);
      const message = messageEntry(null);
      const custom = customEntry(message.id, "note");
      earlier.commit([insertEntry(message), insertEntry(custom)]);
      rerunMigration(state.storage, SESSION_MIGRATIONS, "operation_results");
      const storage = SqlSessionStorage.open(state.storage);
      expect(storage?.scanEntries({ type: "message" }).map((entry) => entry.id)).toEqual([message.id]);
      expect(storage?.scanEntries({ type: "custom", customType: "note" }).map((entry) => entry.id)).toEqual([custom.id]);
      expect(storage?.scanEntries({ customType: "note" }).map((entry) => entry.id)).toEqual([custom.id]);
    });
  });
});

describe("the entry type index", () => {
  it("a message entry adds no row to the type index; other types still do", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("type_index_rows")), (_instance, state) => {
      migrate(state.storage, SESSION_MIGRATIONS);
      let entryRows = 0;
      const sql = state.storage.sql;
      const counting = {
        sql: {
          exec: <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]): SqlStorageCursor<T> => {
            const cursor = sql.exec<T>(query, ...bindings);
            if (query.trimStart().startsWith("INSERT INTO entries")) entryRows += cursor.rowsWritten;
            return cursor;
          },
          get databaseSize() {
            return sql.databaseSize;
          },
          Cursor: sql.Cursor,
          Statement: sql.Statement,
        },
        transactionSync: <T>(closure: () => T): T => state.storage.transactionSync(closure),
      };
      const storage = SqlSessionStorage.create(counting, { id: "s", tenantId: "t", createdAt: 1 });
      const message = messageEntry(null);
      storage.commit([insertEntry(message)]);
      const messageRows = entryRows;
      entryRows = 0;
      storage.commit([insertEntry(customEntry(message.id, "note"))]);
      // The table row and the id index for both; the type index only for the custom entry.
      expect({ message: messageRows, custom: entryRows }).toEqual({ message: 2, custom: 3 });
    });
  });
});
