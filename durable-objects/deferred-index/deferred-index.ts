import { DurableObject } from "cloudflare:workers";
import { LazySchema } from "../sql/lazy-schema.ts";
import { DEFERRED_INDEX_MIGRATIONS } from "./deferred-index-migrations.ts";
import { ScheduleIndex, type ScheduleRegistration, type ScheduleSweepReport } from "./schedule-index.ts";

/** A suspended run as its session registers it: where it lives and when it may be polled. */
export interface DeferredRegistration {
  /** The session object's name (`${tenantId}:${sessionId}`, ARCHITECTURE D2). */
  session: string;
  lane: string;
  operationId: string;
  dueAt: number;
}

/** A due run handed to one sweep, with the lease it holds until the sweep reports back. */
export interface LeasedRun extends DeferredRegistration {
  leasedUntil: number;
}

/** What the sweep learned by asking a run's session (a run is named by its session and operation id). */
export type SweepReport = { session: string; operationId: string; leasedUntil: number; outcome: "resumed" | "expired" | "gone" };

/** A swept run is looked at again after this long unless it registers again sooner (it suspends again). */
export const RECHECK_MS = 15 * 60_000;

type Row = { operation_id: string; session: string; lane: string; due_at: number };

/**
 * A shard of the registry of suspended (deferred) runs that the minute cron resumes (ARCHITECTURE
 * D8). Sessions register a run when it suspends (idempotent: a repeated registration moves its due
 * time); the sweep takes due rows oldest first under a lease, asks each run's session, and reports
 * back; a run that settles (or is aborted) is unregistered by its session's forward of that
 * settlement. The index never calls out and never awaits between a read and its write: every method
 * is one synchronous SQL turn. Stale rows (a removal still on its way, a session deleted, a run
 * resumed by a client) are tolerated: the session answers "gone" and the row is dropped.
 */
export class DeferredIndex extends DurableObject<Env> {
  private readonly schema: LazySchema;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.schema = new LazySchema(ctx.storage, DEFERRED_INDEX_MIGRATIONS);
  }

  async register(runs: DeferredRegistration[]): Promise<void> {
    if (runs.length === 0) return;
    this.schema.create();
    for (const run of runs) {
      this.ctx.storage.sql.exec(
        `INSERT INTO suspended_runs (operation_id, session, lane, due_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (session, operation_id) DO UPDATE SET lane = excluded.lane, due_at = excluded.due_at`,
        run.operationId,
        run.session,
        run.lane,
        run.dueAt,
      );
    }
  }

  /**
   * Runs of `session` that settled or were aborted (ARCHITECTURE D8: they leave with their
   * settlement); idempotent. By session and id: another session's run under the same id stays.
   */
  async unregister(session: string, operationIds: string[]): Promise<void> {
    if (!this.schema.exists) return;
    for (const operationId of operationIds) this.ctx.storage.sql.exec("DELETE FROM suspended_runs WHERE session = ? AND operation_id = ?", session, operationId);
  }

  /**
   * Every suspended run and schedule of a deleted session (`session`: its object name), by the
   * indexes on that column: its deletion leaves no row for a sweep or a listing to find. Idempotent.
   */
  async removeSession(session: string): Promise<void> {
    if (!this.schema.exists) return;
    this.ctx.storage.sql.exec("DELETE FROM suspended_runs WHERE session = ?", session);
    this.scheduleIndex()?.removeSession(session);
  }

  /**
   * Up to `limit` due runs, oldest due first, each leased (its due time moved to the lease's end)
   * so that an overlapping sweep does not take it too. Counts for the sweep's log line.
   */
  async takeDue(now: number, limit: number, leaseMs: number): Promise<{ runs: LeasedRun[]; suspended: number; due: number }> {
    if (!this.schema.exists) return { runs: [], suspended: 0, due: 0 };
    const sql = this.ctx.storage.sql;
    const rows = sql.exec<Row>("SELECT operation_id, session, lane, due_at FROM suspended_runs WHERE due_at <= ? ORDER BY due_at, session, operation_id LIMIT ?", now, limit).toArray();
    const counts = sql.exec<{ suspended: number; due: number }>("SELECT COUNT(*) AS suspended, COALESCE(SUM(due_at <= ?), 0) AS due FROM suspended_runs", now).one();
    const leasedUntil = now + leaseMs;
    for (const row of rows) sql.exec("UPDATE suspended_runs SET due_at = ? WHERE session = ? AND operation_id = ?", leasedUntil, row.session, row.operation_id);
    return {
      runs: rows.map((row) => ({ operationId: row.operation_id, session: row.session, lane: row.lane, dueAt: row.due_at, leasedUntil })),
      suspended: counts.suspended,
      due: counts.due,
    };
  }

  /**
   * The sweep's findings. A run that re-registered meanwhile (it suspended again while its session
   * was asked: its due time is no longer the lease) keeps its new registration, whatever the
   * finding, a "gone" included (the run was between two suspensions when asked); otherwise a
   * resumed run is looked at again after RECHECK_MS and a gone one is dropped.
   */
  async report(reports: SweepReport[], now: number): Promise<void> {
    if (!this.schema.exists) return;
    const sql = this.ctx.storage.sql;
    for (const report of reports) {
      const { session, operationId, leasedUntil } = report;
      if (report.outcome === "gone") sql.exec("DELETE FROM suspended_runs WHERE session = ? AND operation_id = ? AND due_at = ?", session, operationId, leasedUntil);
      else sql.exec("UPDATE suspended_runs SET due_at = ? WHERE session = ? AND operation_id = ? AND due_at = ?", now + RECHECK_MS, session, operationId, leasedUntil);
    }
  }

  /** How many runs the shard holds (tests and operators). */
  async size(): Promise<number> {
    if (!this.schema.exists) return 0;
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM suspended_runs").one().n;
  }

  // Schedules (schedule-index.ts): registered by their sessions, listed tenant-wide, swept by the cron.
  async registerSchedules(entries: ScheduleRegistration[]) { if (entries.length > 0) this.scheduleIndex(true).register(entries); }
  async removeSchedules(session: string, scheduleIds: string[]) { this.scheduleIndex()?.remove(session, scheduleIds); }
  async listSchedules(tenantId: string, limit: number, after: { sessionId: string; scheduleId: string } | undefined, now = Date.now()) { return this.scheduleIndex()?.list(tenantId, limit, after, now) ?? []; }
  async takeOverdueSchedules(now: number, limit: number, leaseMs: number) { return this.scheduleIndex()?.takeOverdue(now, limit, leaseMs) ?? []; }
  async reportSchedules(reports: ScheduleSweepReport[], now: number) { this.scheduleIndex()?.report(reports, now); }

  /** The shard's schedules table (created with the shard's schema when `create`, else only when it exists). */
  private scheduleIndex(create: true): ScheduleIndex;
  private scheduleIndex(): ScheduleIndex | undefined;
  private scheduleIndex(create = false): ScheduleIndex | undefined {
    if (create) this.schema.create();
    return this.schema.exists ? new ScheduleIndex(this.ctx.storage.sql) : undefined;
  }
}
