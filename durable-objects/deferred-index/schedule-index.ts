import type { ListedSchedule, ScheduleDefinition } from "../../schema/schedules.ts";
import { nextDueAfter } from "../session/schedules/schedule-times.ts";

/** A schedule as its session registers it with its shard. */
export interface ScheduleRegistration {
  /** The session object's name (`${tenantId}:${sessionId}`, ARCHITECTURE D2). */
  session: string;
  tenantId: string;
  definition: ScheduleDefinition;
  /** Interval schedules count from it (schedule-times.ts). */
  anchor: number;
  nextRunAt: number | null;
}

/** A session whose schedules the sweep asks about, leased until `leasedUntil`. */
export interface OverdueSession {
  session: string;
  leasedUntil: number;
}

/** What a session answered the sweep: its schedules' next runs, or that it holds no session. */
export type ScheduleSweepReport = { session: string; leasedUntil: number } & ({ gone: true } | { gone: false; nextRuns: { scheduleId: string; nextRunAt: number | null }[] });

/**
 * A registered schedule the sweep looks at again after this long at the latest after a report, even
 * when it is due sooner: the session's own alarm fires it; the sweep only wakes a session whose
 * alarm was lost, so a lost alarm of a frequent schedule is found within this bound.
 */
export const SCHEDULE_RECHECK_MS = 10 * 60_000;
/** How late a schedule's due time must be before the sweep wakes its session (its alarm fires on time otherwise). */
export const SCHEDULE_OVERDUE_MS = 30_000;

type Row = { session: string; schedule_id: string; tenant_id: string; session_id: string; definition: string; anchor: number; next_run_at: number | null };

/**
 * The schedules table of a DeferredIndex shard (migration 2): written by the sessions' forwards of
 * their schedules' creations, edits and deletions (one forward each, not one per firing), read by
 * the tenant-wide listing and by the minute cron's sweep, which wakes a session whose schedule is
 * overdue (its alarm should have fired and did not). Every method is one synchronous SQL turn.
 */
export class ScheduleIndex {
  constructor(private readonly sql: SqlStorage) {}

  register(entries: readonly ScheduleRegistration[]): void {
    for (const entry of entries) {
      this.sql.exec(
        `INSERT INTO schedules (session, schedule_id, tenant_id, session_id, definition, anchor, next_run_at, check_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (session, schedule_id) DO UPDATE SET definition = excluded.definition, anchor = excluded.anchor, next_run_at = excluded.next_run_at, check_at = excluded.check_at`,
        entry.session,
        entry.definition.id,
        entry.tenantId,
        entry.definition.sessionId,
        JSON.stringify(entry.definition),
        entry.anchor,
        entry.nextRunAt,
        entry.definition.paused ? null : entry.nextRunAt,
      );
    }
  }

  remove(session: string, scheduleIds: readonly string[]): void {
    for (const id of scheduleIds) this.sql.exec("DELETE FROM schedules WHERE session = ? AND schedule_id = ?", session, id);
  }

  /** A deleted session's schedules, all at once. */
  removeSession(session: string): void {
    this.sql.exec("DELETE FROM schedules WHERE session = ?", session);
  }

  /** A tenant's schedules after (`sessionId`, `scheduleId`), by session and id; `nextRunAt` computed from the timing when the stored one has passed. */
  list(tenantId: string, limit: number, after: { sessionId: string; scheduleId: string } | undefined, now: number): ListedSchedule[] {
    const rows = this.sql
      .exec<Row>(
        `SELECT session, schedule_id, tenant_id, session_id, definition, anchor, next_run_at FROM schedules
         WHERE tenant_id = ?1 AND (session_id > ?2 OR (session_id = ?2 AND schedule_id > ?3)) ORDER BY session_id, schedule_id LIMIT ?4`,
        tenantId,
        after?.sessionId ?? "",
        after?.scheduleId ?? "",
        limit,
      )
      .toArray();
    return rows.map((row) => {
      const definition = JSON.parse(row.definition) as ListedSchedule;
      return { ...definition, nextRunAt: listedNextRun(definition, row, now) };
    });
  }

  /**
   * Sessions with a schedule overdue by SCHEDULE_OVERDUE_MS, at most `limit`, the longest overdue
   * first; their rows are leased (looked at again after the lease unless a report comes first).
   */
  takeOverdue(now: number, limit: number, leaseMs: number): OverdueSession[] {
    const sessions = this.sql
      .exec<{ session: string }>("SELECT session FROM schedules WHERE check_at IS NOT NULL AND check_at <= ? GROUP BY session ORDER BY MIN(check_at) LIMIT ?", now - SCHEDULE_OVERDUE_MS, limit)
      .toArray();
    const leasedUntil = now + leaseMs;
    for (const { session } of sessions) this.sql.exec("UPDATE schedules SET check_at = ? WHERE session = ? AND check_at IS NOT NULL AND check_at <= ?", leasedUntil, session, now);
    return sessions.map(({ session }) => ({ session, leasedUntil }));
  }

  /**
   * The sweep's findings: a gone session's rows leave; the others' next runs are stored and looked
   * at again by SCHEDULE_RECHECK_MS at the latest, but only on the rows this sweep leased and that
   * were not registered again meanwhile (a PATCH while the session was asked stands).
   */
  report(reports: readonly ScheduleSweepReport[], now: number): void {
    for (const report of reports) {
      if (report.gone) {
        this.removeSession(report.session);
        continue;
      }
      for (const { scheduleId, nextRunAt } of report.nextRuns) {
        const checkAt = nextRunAt === null ? null : Math.max(nextRunAt, now + SCHEDULE_RECHECK_MS);
        this.sql.exec("UPDATE schedules SET next_run_at = ?, check_at = ? WHERE session = ? AND schedule_id = ? AND check_at = ?", nextRunAt, checkAt, report.session, scheduleId, report.leasedUntil);
      }
    }
  }
}

function listedNextRun(definition: ListedSchedule, row: Row, now: number): number | null {
  if (definition.paused || row.next_run_at === null) return null;
  if (row.next_run_at >= now) return row.next_run_at;
  const timing = "cron" in definition ? { cron: definition.cron } : "at" in definition ? { at: definition.at } : { everySeconds: definition.everySeconds };
  return nextDueAfter({ timing, timezone: definition.timezone, anchor: row.anchor }, now) ?? null;
}
