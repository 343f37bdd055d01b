import type { Migration } from "./migrations.ts";
import { IDEMPOTENCY_STATEMENTS } from "./idempotency-table.ts";

// Append-only (D5): the TenantObject's tables.
export const TENANT_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "tenant_store",
    statements: [
      `CREATE TABLE tenant (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      // Only SHA-256 hashes of keys are stored; the key itself is shown once (D17).
      `CREATE TABLE api_keys (
        key_id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      )`,
      `CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL
      )`,
      "CREATE INDEX sessions_by_time ON sessions (created_at, session_id)",
    ],
  },
  {
    version: 2,
    name: "idempotency",
    statements: IDEMPOTENCY_STATEMENTS,
  },
  {
    version: 3,
    name: "quotas",
    statements: [
      // Per-tenant quotas (null: the service default) and the current one-minute request window.
      "ALTER TABLE tenant ADD COLUMN requests_per_minute INTEGER",
      `CREATE TABLE request_window (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        window_start INTEGER NOT NULL,
        count INTEGER NOT NULL
      )`,
    ],
  },
];
