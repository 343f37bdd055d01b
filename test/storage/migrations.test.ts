import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LazySchema } from "../../durable-objects/sql/lazy-schema.ts";
import { MigrationHistoryMismatch, migrate, type Migration } from "../../durable-objects/sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../../durable-objects/session/storage/session-migrations.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import { objectStub, uniqueObjectName } from "../helpers/storage.ts";

// A SessionObject holds a schema only once a session was created in it (sql/lazy-schema.ts); then
// its constructor brings the schema up to date. These tests start from an object at the last
// session migration, extend that list with their own migrations (append-only), or drop everything
// to start at zero.

const SESSION_TABLES = ["counters", "deferred_registrations", "due_work", "entries", "idempotency", "list_items", "meta", "op_results", "payload_chunks", "schedule_registrations", "schedule_runs", "schedules", "schema_migrations", "settlement_outbox", "usage", "usage_forward", "vals"];
const current = SESSION_MIGRATIONS.length;

const m2: Migration = { version: current + 1, name: "test_extra_a", statements: ["CREATE TABLE test_extra_a (id INTEGER PRIMARY KEY, v TEXT)"] };
const m3: Migration = {
  version: current + 2,
  name: "test_extra_b",
  statements: ["CREATE TABLE test_extra_b (id INTEGER PRIMARY KEY)", "CREATE INDEX test_extra_b_by_id ON test_extra_b (id)"],
};

function tables(state: DurableObjectState): string[] {
  return state.storage.sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
    .toArray()
    .map((row) => row.name);
}

function history(state: DurableObjectState): { version: number; name: string }[] {
  return state.storage.sql.exec<{ version: number; name: string }>("SELECT version, name FROM schema_migrations ORDER BY version").toArray();
}

/** A fresh object with the session migrations applied, as a created session's object has them. */
function inFreshObject<R>(body: (state: DurableObjectState) => R): Promise<R> {
  return runInDurableObject(objectStub(uniqueObjectName("migrations")), (_instance, state) => {
    migrate(state.storage, SESSION_MIGRATIONS);
    return body(state);
  });
}

describe("migrations (ARCHITECTURE D5)", () => {
  it("applying from zero creates the session tables and records one version row per migration", async () => {
    await inFreshObject((state) => {
      for (const table of tables(state)) state.storage.sql.exec(`DROP TABLE "${table}"`);
      expect(tables(state)).toEqual([]);
      expect(migrate(state.storage, SESSION_MIGRATIONS)).toBe(SESSION_MIGRATIONS.length);
      expect(tables(state)).toEqual(SESSION_TABLES);
      expect(history(state)).toEqual(SESSION_MIGRATIONS.map(({ version, name }) => ({ version, name })));
      // The schema is usable: a session can be created and written.
      const storage = SqlSessionStorage.create(state.storage, { id: "s", tenantId: "t", createdAt: 1 });
      expect(storage.commit([]).seqs).toEqual([]);
      expect(storage.metadata).toMatchObject({ id: "s", createdAt: 1 });
    });
  });

  it("an object that never held a session has no schema; creating one applies every migration", async () => {
    await runInDurableObject(objectStub(uniqueObjectName("lazy")), (_instance, state) => {
      expect(tables(state)).toEqual([]);
      const schema = new LazySchema(state.storage, SESSION_MIGRATIONS);
      expect(schema.exists).toBe(false);
      expect(tables(state)).toEqual([]);
      schema.create();
      expect(tables(state)).toEqual(SESSION_TABLES);
      expect(history(state)).toEqual(SESSION_MIGRATIONS.map(({ version, name }) => ({ version, name })));
    });
  });

  it("an object that holds a schema is brought up to date when it starts", async () => {
    await inFreshObject((state) => {
      const schema = new LazySchema(state.storage, [...SESSION_MIGRATIONS, m2]);
      expect(schema.exists).toBe(true);
      expect(tables(state)).toContain("test_extra_a");
      expect(history(state)).toHaveLength(current + 1);
    });
  });

  it("re-running an applied list is a no-op", async () => {
    await inFreshObject((state) => {
      const list = [...SESSION_MIGRATIONS, m2];
      migrate(state.storage, list);
      state.storage.sql.exec("INSERT INTO test_extra_a (v) VALUES ('kept')");
      const appliedAt = state.storage.sql.exec<{ applied_at: number }>("SELECT applied_at FROM schema_migrations WHERE version = ?", m2.version).one().applied_at;
      const before = { tables: tables(state), history: history(state) };
      // Each statement would fail if it ran again (CREATE TABLE without IF NOT EXISTS).
      expect(migrate(state.storage, list)).toBe(current + 1);
      expect({ tables: tables(state), history: history(state) }).toEqual(before);
      expect(state.storage.sql.exec<{ v: string }>("SELECT v FROM test_extra_a").toArray()).toEqual([{ v: "kept" }]);
      expect(state.storage.sql.exec<{ applied_at: number }>("SELECT applied_at FROM schema_migrations WHERE version = ?", m2.version).one().applied_at).toBe(appliedAt);
    });
  });

  it("applying [m1] and then [m1, m2] applies only m2 the second time", async () => {
    await inFreshObject((state) => {
      migrate(state.storage, [...SESSION_MIGRATIONS, m2]);
      expect(tables(state)).toContain("test_extra_a");
      expect(tables(state)).not.toContain("test_extra_b");
      state.storage.sql.exec("INSERT INTO test_extra_a (v) VALUES ('survives')");
      expect(migrate(state.storage, [...SESSION_MIGRATIONS, m2, m3])).toBe(current + 2);
      expect(tables(state)).toEqual([...SESSION_TABLES, "test_extra_a", "test_extra_b"].sort());
      expect(history(state)).toEqual([
        ...SESSION_MIGRATIONS.map(({ version, name }) => ({ version, name })),
        { version: current + 1, name: "test_extra_a" },
        { version: current + 2, name: "test_extra_b" },
      ]);
      expect(state.storage.sql.exec<{ v: string }>("SELECT v FROM test_extra_a").toArray()).toEqual([{ v: "survives" }]);
    });
  });

  it("a storage that recorded a migration this code does not know throws MigrationHistoryMismatch", async () => {
    await inFreshObject((state) => {
      migrate(state.storage, [...SESSION_MIGRATIONS, m2]);
      // Older code that knows only the session migrations meets a storage one version ahead.
      expect(() => migrate(state.storage, SESSION_MIGRATIONS)).toThrow(MigrationHistoryMismatch);
      // Code whose version 2 has another name (history was edited, not appended to).
      const renamed: Migration = { ...m2, name: "test_extra_renamed" };
      expect(() => migrate(state.storage, [...SESSION_MIGRATIONS, renamed, m3])).toThrow(MigrationHistoryMismatch);
      // Nothing of the refused list was applied.
      expect(tables(state)).not.toContain("test_extra_b");
      expect(history(state).map((row) => row.name)).toEqual([...SESSION_MIGRATIONS.map((m) => m.name), "test_extra_a"]);
    });
  });

  it("a list whose versions are not 1, 2, 3, … is refused before anything runs", async () => {
    await inFreshObject((state) => {
      expect(() => migrate(state.storage, [...SESSION_MIGRATIONS, m3])).toThrow(MigrationHistoryMismatch);
      expect(tables(state)).toEqual(SESSION_TABLES);
    });
  });

  it("a failing migration rolls back with its version row, and a fixed list applies later", async () => {
    await inFreshObject((state) => {
      const broken: Migration = { version: current + 1, name: "test_extra_a", statements: [...m2.statements, "THIS IS NOT SQL"] };
      expect(() => migrate(state.storage, [...SESSION_MIGRATIONS, broken])).toThrow();
      expect(tables(state)).toEqual(SESSION_TABLES);
      expect(history(state)).toHaveLength(current);
      migrate(state.storage, [...SESSION_MIGRATIONS, m2]);
      expect(history(state)).toHaveLength(current + 1);
    });
  });
});
