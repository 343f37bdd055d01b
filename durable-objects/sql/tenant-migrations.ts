import type { Migration } from "./migrations.ts";

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
    statements: [
      // Remembered responses of creating POSTs (ARCHITECTURE D15), kept 24 h.
      `CREATE TABLE idempotency (
        key TEXT PRIMARY KEY,
        request_hash TEXT NOT NULL,
        status INTEGER,
        body TEXT,
        created_at INTEGER NOT NULL
      )`,
      "CREATE INDEX idempotency_by_time ON idempotency (created_at)",
    ],
  },
];
