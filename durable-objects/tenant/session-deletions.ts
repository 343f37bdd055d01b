import { ScheduleClaims } from "./schedule-claims.ts";
import { ACTIVITY_STEP_MS, SessionIndex } from "./tenant-listings.ts";
import { SessionUsageMarks } from "./session-usage-marks.ts";

/** A queued session, with the creation time its index row holds (none when it has no row). */
export interface QueuedDeletion {
  sessionId: string;
  createdAt?: number;
  /** Queued by retention as idle: deleted only if it still is (an open operation keeps it). */
  retention: boolean;
}

/**
 * The tenant's durable queue of sessions to delete in the background (tenant/data-lifecycle.ts):
 * filled by `DELETE /v1/sessions?metadata.…`, a retention sweep, or the tenant's deletion, in one
 * SQL statement each; emptied a bounded batch per alarm tick. A queued session is hidden from
 * listings at once (session-search.ts) and leaves the queue only with its index row, after its
 * object and shard rows are gone, so a tick that dies part-way is repeated from what is left.
 * Every method is one synchronous SQL turn.
 */
export class SessionDeletions {
  constructor(private readonly sql: SqlStorage) {}

  /**
   * Queues the indexed sessions holding every pair. `listed`: how many of them were still listed
   * (not queued before), so a repeat answers 0; `queued`: how many are queued now. One queued by
   * retention is now queued as asked for: activity no longer takes it out of the queue.
   */
  queueMatching(pairs: readonly [string, string][], now: number): { listed: number; queued: number } {
    const matching = pairs.map(() => "SELECT session_id FROM session_metadata WHERE key = ? AND value = ?").join(" INTERSECT ");
    const values = pairs.flat();
    const counts = this.sql
      .exec<{ queued: number; listed: number }>(
        `SELECT count(*) AS queued, coalesce(sum(m.session_id NOT IN (SELECT session_id FROM session_deletions)), 0) AS listed FROM (${matching}) AS m`,
        ...values,
      )
      .one();
    if (counts.queued === 0) return counts;
    this.sql.exec(
      `INSERT INTO session_deletions (session_id, queued_at) SELECT session_id, ? FROM (${matching}) WHERE true ON CONFLICT (session_id) DO UPDATE SET idle_before = NULL`,
      now,
      ...values,
    );
    return counts;
  }

  /** The tenant's deletion: every indexed session. */
  queueAll(now: number): void {
    this.sql.exec("INSERT INTO session_deletions (session_id, queued_at) SELECT session_id, ? FROM sessions WHERE true ON CONFLICT (session_id) DO UPDATE SET idle_before = NULL", now);
  }

  /**
   * Retention: sessions whose last activity is before `cutoff` (by the activity index), marked so
   * that activity before their turn takes them out again (tenant-listings.ts SessionIndex.touch);
   * answers how many were newly queued. The recorded activity may be up to ACTIVITY_STEP_MS behind
   * the latest, so only sessions recorded that much before the cutoff are idle for certain. A
   * session with an open operation is not idle, however long ago its last one settled: an end user
   * who came back after the period is answered, not deleted mid-run.
   */
  queueIdle(cutoff: number, now: number, busy: ReadonlySet<string>): number {
    // `busy`: sessions whose open operations the ledger holds only in memory (an accept in flight,
    // or one that took its reservation over), at most the open-operations quota: not idle either.
    return this.sql
      .exec(
        `INSERT INTO session_deletions (session_id, queued_at, idle_before)
         SELECT session_id, ?, ? FROM sessions WHERE last_active_at < ? AND session_id NOT IN (SELECT session_id FROM open_operations)
           AND session_id NOT IN (SELECT value FROM json_each(?))
         ON CONFLICT DO NOTHING RETURNING session_id`,
        now,
        cutoff,
        cutoff - ACTIVITY_STEP_MS,
        JSON.stringify([...busy]),
      )
      .toArray().length;
  }

  /** A session retention queued as idle is active after all: it leaves the queue (a deletion asked for by name stays). */
  keep(sessionId: string): void {
    this.sql.exec("DELETE FROM session_deletions WHERE session_id = ? AND idle_before IS NOT NULL", sessionId);
  }

  queue(sessionId: string, now: number): void {
    this.sql.exec("INSERT INTO session_deletions (session_id, queued_at) VALUES (?, ?) ON CONFLICT DO NOTHING", sessionId, now);
  }

  /**
   * The next batch, oldest queued first. Retention's choices are looked at again at their turn: a
   * session queued as idle that has an operation open since is not idle, and leaves the queue.
   */
  next(limit: number): QueuedDeletion[] {
    this.sql.exec("DELETE FROM session_deletions WHERE idle_before IS NOT NULL AND session_id IN (SELECT session_id FROM open_operations)");
    // With the creation time the index holds: the session object is asked to delete that one only.
    return this.sql
      .exec<{ session_id: string; created_at: number | null; idle_before: number | null }>(
        "SELECT d.session_id, s.created_at, d.idle_before FROM session_deletions d LEFT JOIN sessions s ON s.session_id = d.session_id ORDER BY d.queued_at, d.session_id LIMIT ?",
        limit,
      )
      .toArray()
      .map((row) => ({ sessionId: row.session_id, ...(row.created_at !== null && { createdAt: row.created_at }), retention: row.idle_before !== null }));
  }

  /**
   * The session's object and shard rows are gone: its index row, usage mark and queue row go now
   * (true when the queue row was there to go),
   * and the slots of its operations still open (a deleted session never settles them, so nothing
   * else would release them). `createdAt`, the deleted session's (when the object still held one):
   * a row of another creation time is a session created again under the id since its object was
   * deleted, whose registration took the old one's row and place (session-listing.ts
   * registerSession); it stays, with all it holds.
   */
  finished(sessionId: string, createdAt?: number): boolean {
    if (createdAt !== undefined && new SessionIndex(this.sql).heldByAnother(sessionId, createdAt)) return false;
    this.sql.exec("DELETE FROM open_operations WHERE session_id = ?", sessionId);
    new SessionIndex(this.sql).unregister(sessionId);
    new SessionUsageMarks(this.sql).forget(sessionId);
    new ScheduleClaims(this.sql).forgetSession(sessionId);
    // Whether this call took the session from the queue (a concurrent tick may have already).
    return this.sql.exec("DELETE FROM session_deletions WHERE session_id = ?", sessionId).rowsWritten > 0;
  }

  /**
   * A deletion that failed goes to the back of the queue: one unreachable session never holds up
   * the others. Behind the last one queued, whatever the clock says (it may not have moved).
   */
  postpone(sessionId: string): void {
    this.sql.exec("UPDATE session_deletions SET queued_at = (SELECT max(queued_at) + 1 FROM session_deletions) WHERE session_id = ?", sessionId);
  }

  remaining(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM session_deletions").one().n;
  }
}
