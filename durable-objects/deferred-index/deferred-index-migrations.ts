import type { Migration } from "../sql/migrations.ts";

/** The DeferredIndex shard's tables (deferred-index.ts). Append-only, like every migration list. */
export const DEFERRED_INDEX_MIGRATIONS: Migration[] = [
] = [
  {
    version: 1,
    name: "suspended_runs",
    statements: [
      `CREATE TABLE suspended_runs (
        operation_id TEXT PRIMARY KEY,
        session TEXT NOT NULL,
        lane TEXT NOT NULL,
        due_at INTEGER NOT NULL
      )`,
      "CREATE INDEX suspended_runs_due ON suspended_runs (due_at)",
    ],
  },
  {
    version: 2,
    name: "schedules",
    // Schedules registered by their sessions (schedule-index.ts): the tenant-wide listing and the
    // cron's safety net for a session whose alarm did not fire.
    statements: [
      `CREATE TABLE schedules (
        session TEXT NOT NULL,
        schedule_id TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        definition TEXT NOT NULL,
        anchor INTEGER NOT NULL,
        next_run_at INTEGER,
        check_at INTEGER,
        PRIMARY KEY (session, schedule_id)
      ) WITHOUT ROWID`,
      "CREATE INDEX schedules_tenant ON schedules (tenant_id, session_id, schedule_id)",
      "CREATE INDEX schedules_check ON schedules (check_at) WHERE check_at IS NOT NULL",
    ],
  },
  {
    version: 3,
    name: "suspended_runs_by_session",
    // A deleted session's rows are dropped by its name (deferred-index.ts removeSession).
    statements: ["CREATE INDEX suspended_runs_by_session ON suspended_runs (session)"],
  },
  {
    version: 4,
    name: "suspended_runs_by_session_and_operation",
    // An operation id is unique within its session only (a client may choose it): two sessions of
    // one shard may suspend runs under the same id. Keyed by both; the session's own rows are a
    // prefix of the key, so the index by session goes with the old table.
    statements: [
      `CREATE TABLE suspended_runs_keyed (
        session TEXT NOT NULL,
        operation_id TEXT NOT NULL,
        lane TEXT NOT NULL,
        due_at INTEGER NOT NULL,
        PRIMARY KEY (session, operation_id)
      ) WITHOUT ROWID`,
      "INSERT INTO suspended_runs_keyed (session, operation_id, lane, due_at) SELECT session, operation_id, lane, due_at FROM suspended_runs",
      "DROP TABLE suspended_runs",
      "ALTER TABLE suspended_runs_keyed RENAME TO suspended_runs",
      "CREATE INDEX suspended_runs_due ON suspended_runs (due_at)",
    ],
  },
];
