import { WATCH_MAX_SOCKET_AGE_MS } from "../../schema/watch.ts";

/** Sessions told at once to close a revoked key's sockets; the alarm continues past a batch. */
export const REVOCATION_BATCH = 50;
/** A failed notification is retried by the alarm after this long. */
export const REVOCATION_RETRY_MS = 5_000;
/**
 * A registration older than this can hold no socket that still receives anything: a socket is
 * closed at its first message past its maximum age. Twice the age leaves room for clock skew
 * between objects.
 */
const REGISTRATION_TTL_MS = 2 * WATCH_MAX_SOCKET_AGE_MS;

/** Tells one session object to close the sockets opened with a key; throws when it cannot be reached. */
export type CloseWatches = (sessionId: string, keyId: string) => Promise<unknown>;

/**
 * The TenantObject's record of where each key has watch sockets open (ARCHITECTURE D17:
 * revocation is immediate, open sockets included). A session object registers every socket it
 * accepts, after accepting it; revoking a key tells each registered session to close that key's
 * sockets, a batch at once, and the tenant's alarm retries failures and continues past a batch.
 * A row stays until its key is revoked or it expires, so an unreachable session is retried, never
 * forgotten while it can still hold a live socket.
 */
export class TenantWatches {
  constructor(
    private readonly sql: SqlStorage,
    private readonly closeWatches: CloseWatches,
  ) {}

  /** Records (or refreshes) that `keyId` has a socket on `sessionId`, unless the key is revoked or unknown. */
  register(keyId: string, sessionId: string, now: number): { active: boolean } {
    const key = this.sql.exec<{ revoked_at: number | null }>("SELECT revoked_at FROM api_keys WHERE key_id = ?", keyId).toArray()[0];
    if (!key || key.revoked_at !== null) return { active: false };
    this.sql.exec("DELETE FROM watch_registrations WHERE registered_at < ?", now - REGISTRATION_TTL_MS);
    this.sql.exec(
      `INSERT INTO watch_registrations (key_id, session_id, registered_at) VALUES (?, ?, ?)
       ON CONFLICT (key_id, session_id) DO UPDATE SET registered_at = excluded.registered_at`,
      keyId,
      sessionId,
      now,
    );
    return { active: true };
  }

  /**
   * Notifies one batch of sessions holding sockets of revoked keys; a notified session's row is
   * deleted. Returns when the alarm must run again, if rows remain (failures, or more than a batch):
   * the TenantObject shares its one alarm with other work, so it arms it.
   */
  async closeRevoked(now: number): Promise<number | undefined> {
    this.sql.exec("DELETE FROM watch_registrations WHERE registered_at < ?", now - REGISTRATION_TTL_MS);
    const rows = this.sql
      .exec<{ key_id: string; session_id: string }>(
        `SELECT w.key_id, w.session_id FROM watch_registrations w JOIN api_keys k ON k.key_id = w.key_id
         WHERE k.revoked_at IS NOT NULL LIMIT ?`,
        REVOCATION_BATCH,
      )
      .toArray();
    if (rows.length === 0) return undefined;
    // The rows read above may be deleted after this await: a revoked key registers nothing new
    // (register refuses it), and a concurrent pass over the same rows only repeats an idempotent close.
    const outcomes = await Promise.allSettled(rows.map((row) => this.closeWatches(row.session_id, row.key_id)));
    let failed = false;
    rows.forEach((row, i) => {
      if (outcomes[i]?.status === "fulfilled") {
        this.sql.exec("DELETE FROM watch_registrations WHERE key_id = ? AND session_id = ?", row.key_id, row.session_id);
      } else failed = true;
    });
    const remaining = this.sql
      .exec<{ n: number }>(
        `SELECT count(*) AS n FROM watch_registrations w JOIN api_keys k ON k.key_id = w.key_id WHERE k.revoked_at IS NOT NULL`,
      )
      .one().n;
    return remaining > 0 ? now + (failed ? REVOCATION_RETRY_MS : 0) : undefined;
  }
}
