/** A tenant's schedules unless an administrator sets `maxSchedules` (spec/API.md "Schedules"). */
export const DEFAULT_MAX_SCHEDULES = 1_000;
/**
 * How long a claim waits for its schedule's registration: past it, a claim whose creation never
 * committed (refused, or the session killed before its write) no longer counts. A creation that
 * did commit registers within seconds, and its registration holds the claim whatever its age.
 */
export const SCHEDULE_CLAIM_TTL_MS = 10 * 60_000;

/** A claim made (`fresh`) or held already; or the tenant's `maxSchedules`; or a tenant being deleted, which creates nothing. */
export type ScheduleClaim = { ok: true; fresh: boolean } | { ok: false; refusal: "limit"; limit: number } | { ok: false; refusal: "tenantDeleting" };

/**
 * The tenant's count of schedules (`schedule_claims`, migration 23): its sessions own the
 * schedules, but their definitions sit in DeferredIndex shards every tenant shares, so one tenant
 * must not grow them without bound. A creation claims its (session, schedule) first, as pending;
 * the session's registration forward (the durable one that also reaches the shard) holds it; a
 * removal forward or the session's deletion drops it. A claim lost on its way (its creation
 * refused, the session killed) lapses after SCHEDULE_CLAIM_TTL_MS, so the count never stays above
 * the schedules that exist. Every method is one synchronous SQL turn.
 */
export class ScheduleClaims {
  constructor(private readonly sql: SqlStorage) {}

  /** Claims `(sessionId, scheduleId)` unless the tenant holds `limit` already; a claim held already is answered as it is. */
  claim(sessionId: string, scheduleId: string, limit: number, now: number): ScheduleClaim {
    this.sql.exec("DELETE FROM schedule_claims WHERE pending_until IS NOT NULL AND pending_until < ?", now);
    const held = this.sql.exec("SELECT 1 FROM schedule_claims WHERE session_id = ? AND schedule_id = ?", sessionId, scheduleId).toArray().length > 0;
    if (held) return { ok: true, fresh: false };
    const count = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM schedule_claims").one().n;
    if (count >= limit) return { ok: false, refusal: "limit", limit };
    this.sql.exec("INSERT INTO schedule_claims (session_id, schedule_id, pending_until) VALUES (?, ?, ?)", sessionId, scheduleId, now + SCHEDULE_CLAIM_TTL_MS);
    return { ok: true, fresh: true };
  }

  /** A refused creation gives back the claim it made. */
  release(sessionId: string, scheduleId: string): void {
    this.sql.exec("DELETE FROM schedule_claims WHERE session_id = ? AND schedule_id = ? AND pending_until IS NOT NULL", sessionId, scheduleId);
  }

  /** The session's registration forward: schedules that exist are held, removed ones dropped. */
  registered(sessionId: string, scheduleIds: readonly string[], removedIds: readonly string[]): void {
    for (const id of scheduleIds) {
      this.sql.exec("INSERT INTO schedule_claims (session_id, schedule_id, pending_until) VALUES (?, ?, NULL) ON CONFLICT (session_id, schedule_id) DO UPDATE SET pending_until = NULL", sessionId, id);
    }
    for (const id of removedIds) this.sql.exec("DELETE FROM schedule_claims WHERE session_id = ? AND schedule_id = ?", sessionId, id);
  }

  /** A deleted session's schedules are gone with it. */
  forgetSession(sessionId: string): void {
    this.sql.exec("DELETE FROM schedule_claims WHERE session_id = ?", sessionId);
  }
}
