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
    name: "suspended_runs_by_session",
    // A deleted session's rows are dropped by its name (deferred-index.ts removeSession).
    statements: ["CREATE INDEX suspended_runs_by_session ON suspended_runs (session)"],
  },
];
