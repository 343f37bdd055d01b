/** Remembered responses of creating POSTs (ARCHITECTURE D15), kept for 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A claim older than this without a response is taken over (its request died mid-way). */
export const IDEMPOTENCY_CLAIM_MS = 60 * 1000;

export type IdempotencyClaim =
  | { state: "claimed" }
  | { state: "replay"; status: number; body: string }
  | { state: "conflict" }
  | { state: "in_progress"; retryAfterSeconds: number };

/** The answer a repeat of a request gets. */
export interface IdempotencyReplay {
  status: number;
  body: string;
}

type Row = { request_hash: string; status: number | null; body: string | null; created_at: number };

/**
 * The owning object's idempotency table. `claim` and `complete` are each one synchronous SQL turn,
 * so two requests with one key cannot both claim it. Keys arrive scoped by the caller (the route
 * and the object's tenant), so one key used on two routes names two records.
 */
export class IdempotencyStore {
  constructor(private readonly sql: SqlStorage) {}

  claim(key: string, requestHash: string, now = Date.now()): IdempotencyClaim {
    this.sql.exec("DELETE FROM idempotency WHERE created_at < ?", now - IDEMPOTENCY_TTL_MS);
    const row = this.sql.exec<Row>("SELECT request_hash, status, body, created_at FROM idempotency WHERE key = ?", key).toArray()[0];
    if (row) {
      if (row.request_hash !== requestHash) return { state: "conflict" };
      if (row.status !== null && row.body !== null) return { state: "replay", status: row.status, body: row.body };
      const held = row.created_at + IDEMPOTENCY_CLAIM_MS - now;
      if (held > 0) return { state: "in_progress", retryAfterSeconds: Math.max(1, Math.ceil(held / 1000)) };
    }
    this.sql.exec(
      `INSERT INTO idempotency (key, request_hash, status, body, created_at) VALUES (?, ?, NULL, NULL, ?)
       ON CONFLICT (key) DO UPDATE SET request_hash = excluded.request_hash, status = NULL, body = NULL, created_at = excluded.created_at`,
      key,
      requestHash,
      now,
    );
    return { state: "claimed" };
  }

  /**
   * Records what a repeat of the request answers (`replay`), or releases the claim (`null`): the
   * caller remembers successes only (worker/middleware/idempotency.ts says why).
   */
  complete(key: string, requestHash: string, replay: IdempotencyReplay | null): void {
    if (replay === null) {
      this.sql.exec("DELETE FROM idempotency WHERE key = ? AND request_hash = ?", key, requestHash);
      return;
    }
    this.sql.exec("UPDATE idempotency SET status = ?, body = ? WHERE key = ? AND request_hash = ?", replay.status, replay.body, key, requestHash);
  }
}
