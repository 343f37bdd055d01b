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

/**
 * The effect receipt (a later, append-only migration of both lists): what a request's effect
 * answered inside the owning object, written in the same storage batch as the effect itself, so a
 * retry after a crash between the effect and the remembered answer finds the effect instead of
 * making it again (durable-objects/rpc/idempotency.ts). `released`: the claim was given back with
 * an effect recorded, so the next request with the key takes it over at once.
 */
export const EFFECT_RECEIPT_STATEMENTS: readonly string[] = [
  "ALTER TABLE idempotency ADD COLUMN effect TEXT",
  "ALTER TABLE idempotency ADD COLUMN released INTEGER NOT NULL DEFAULT 0",
];
