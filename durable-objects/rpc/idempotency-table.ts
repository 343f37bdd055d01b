// The idempotency table (ARCHITECTURE D15) in every object that owns creating POSTs: the
// statements of one append-only migration, shared verbatim by the session and tenant lists.
export const IDEMPOTENCY_STATEMENTS: readonly string[] = [
  `CREATE TABLE idempotency (
        key TEXT PRIMARY KEY,
        request_hash TEXT NOT NULL,
        status INTEGER,
        body TEXT,
        created_at INTEGER NOT NULL
      )`,
  "CREATE INDEX idempotency_by_time ON idempotency (created_at)",
];
