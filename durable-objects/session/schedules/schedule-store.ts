import { MAX_SCHEDULE_RUNS_KEPT, type Schedule, type ScheduleIfBusy, type ScheduleLastRun, type ScheduleRun, type ScheduleSkipReason, type ScheduleTiming } from "../../../schema/schedules.ts";
import { FORWARD_SAFETY_NET_MS } from "../due-work/settlement-outbox.ts";
import type { TimingSpec } from "./schedule-times.ts";

/** A schedule as stored: its timing spec with what the firing reads. */
export interface StoredSchedule extends TimingSpec {
  id: string;
  lane: string;
  prompt: string;
  ifBusy: ScheduleIfBusy;
  paused: boolean;
  nextRunAt: number | undefined;
  lastRun: ScheduleLastRun | undefined;
  createdAt: number;
  updatedAt: number;
  /** The hash of the creating body: a repeated creation with the same id and body answers this schedule. */
  bodyHash: string;
}

type Row = {
  id: string;
  lane: string;
  timing: string;
  timezone: string;
  anchor: number;
  prompt: string;
  if_busy: string;
  paused: number;
  next_run_at: number | null;
  last_run: string | null;
  created_at: number;
  updated_at: number;
  body_hash: string;
};

type RunRow = { due_at: number; fired_at: number; operation_id: string | null; skipped: string | null; detail: string | null; coalesced: number };

/** A registration (or removal) with the DeferredIndex shard not yet forwarded; `version` tells a newer one apart. */
export type RegistrationRow = { schedule_id: string; removal: number; version: number };

const COLUMNS = "id, lane, timing, timezone, anchor, prompt, if_busy, paused, next_run_at, last_run, created_at, updated_at, body_hash";

/**
 * A session's schedules, their runs and their registrations with the DeferredIndex shard (session
 * migration 15). Every method is one synchronous SQL turn, so a caller's read and the writes that
 * depend on it land in one atomic batch.
 */
export class ScheduleStore {
  constructor(
    private readonly sql: SqlStorage,
    private readonly clock: () => number,
  ) {}

  get(id: string): StoredSchedule | undefined {
    const row = this.sql.exec<Row>(`SELECT ${COLUMNS} FROM schedules WHERE id = ?`, id).toArray()[0];
    return row && fromRow(row);
  }

  /** A lane's schedules by id (at most MAX_SCHEDULES_PER_LANE). */
  onLane(lane: string): StoredSchedule[] {
    return this.sql.exec<Row>(`SELECT ${COLUMNS} FROM schedules WHERE lane = ? ORDER BY id`, lane).toArray().map(fromRow);
  }

  countOnLane(lane: string): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM schedules WHERE lane = ?", lane).one().n;
  }

  /** Every schedule's next run as the index lists it (null: paused, or none left). */
  nextRuns(): { scheduleId: string; nextRunAt: number | null }[] {
    return this.sql
      .exec<{ id: string; next_run_at: number | null; paused: number }>("SELECT id, next_run_at, paused FROM schedules ORDER BY id")
      .toArray()
      .map((row) => ({ scheduleId: row.id, nextRunAt: row.paused === 1 ? null : row.next_run_at }));
  }

  /** Unpaused schedules due at `now` (a failed firing's retry time standing for its due time), the longest due first. */
  due(now: number, limit: number): StoredSchedule[] {
    return this.sql
      .exec<Row>(
        `SELECT ${COLUMNS} FROM schedules WHERE paused = 0 AND next_run_at IS NOT NULL AND COALESCE(retry_at, next_run_at) <= ? ORDER BY COALESCE(retry_at, next_run_at), id LIMIT ?`,
        now,
        limit,
      )
      .toArray()
      .map(fromRow);
  }

  /** The earliest next run (or retry) of an unpaused schedule: the session's one alarm covers it (due-work.ts). */
  earliestDue(): number | undefined {
    return this.sql.exec<{ due: number | null }>("SELECT MIN(COALESCE(retry_at, next_run_at)) AS due FROM schedules WHERE paused = 0 AND next_run_at IS NOT NULL").one().due ?? undefined;
  }

  /** A firing failed before anything was started: the same due time is tried again at `at`. */
  retryAt(scheduleId: string, at: number): void {
    this.sql.exec("UPDATE schedules SET retry_at = ? WHERE id = ?", at, scheduleId);
  }

  /** Inserts or replaces a schedule, and records its registration with the shard (answers when it must be forwarded at the latest). */
  put(schedule: StoredSchedule): number {
    this.sql.exec(
      `INSERT INTO schedules (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET lane = excluded.lane, timing = excluded.timing, timezone = excluded.timezone, anchor = excluded.anchor,
         prompt = excluded.prompt, if_busy = excluded.if_busy, paused = excluded.paused, next_run_at = excluded.next_run_at,
         retry_at = NULL, last_run = excluded.last_run, updated_at = excluded.updated_at`,
      schedule.id,
      schedule.lane,
      JSON.stringify(schedule.timing),
      schedule.timezone,
      schedule.anchor,
      schedule.prompt,
      schedule.ifBusy,
      schedule.paused ? 1 : 0,
      schedule.nextRunAt ?? null,
      schedule.lastRun ? JSON.stringify(schedule.lastRun) : null,
      schedule.createdAt,
      schedule.updatedAt,
      schedule.bodyHash,
    );
    return this.register(schedule.id, false);
  }

  /** Deletes a schedule with its runs, and records its removal from the shard. */
  delete(id: string): number {
    this.sql.exec("DELETE FROM schedules WHERE id = ?", id);
    this.sql.exec("DELETE FROM schedule_runs WHERE schedule_id = ?", id);
    return this.register(id, true);
  }

  /**
   * A due time reached: its run (or skip) recorded, the schedule's next due time and last run
   * stored, in the caller's turn. Only the newest MAX_SCHEDULE_RUNS_KEPT runs are kept. The shard
   * is not told: it computes the next due time from the timing (schedule-index.ts).
   *
   * The firing read the schedule before it awaited the tenant and the lane, so the row may have
   * changed since: an edit meanwhile set its own next due time (it is kept: only the due time
   * fired is moved on), and a schedule deleted meanwhile gets no run row (nothing would ever
   * delete it).
   */
  reached(schedule: StoredSchedule, run: ScheduleRun, nextRunAt: number | undefined): void {
    this.sql.exec(
      `INSERT INTO schedule_runs (schedule_id, due_at, fired_at, operation_id, skipped, detail, coalesced)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (SELECT 1 FROM schedules WHERE id = ?1)
       ON CONFLICT (schedule_id, due_at) DO NOTHING`,
      schedule.id,
      run.dueAt,
      run.firedAt,
      run.operationId ?? null,
      run.skipped ?? null,
      run.detail ?? null,
      run.coalesced ?? 0,
    );
    this.sql.exec(
      `DELETE FROM schedule_runs WHERE schedule_id = ?1 AND due_at < (
         SELECT MIN(due_at) FROM (SELECT due_at FROM schedule_runs WHERE schedule_id = ?1 ORDER BY due_at DESC LIMIT ?2))`,
      schedule.id,
      MAX_SCHEDULE_RUNS_KEPT,
    );
    const lastRun: ScheduleLastRun = { dueAt: run.dueAt, ...(run.operationId !== undefined && { operationId: run.operationId }), ...(run.skipped !== undefined && { skipped: run.skipped }) };
    this.sql.exec(
      "UPDATE schedules SET next_run_at = CASE WHEN next_run_at = ?1 THEN ?2 ELSE next_run_at END, retry_at = NULL, last_run = ?3 WHERE id = ?4",
      run.dueAt,
      nextRunAt ?? null,
      JSON.stringify(lastRun),
      schedule.id,
    );
  }

  /** A schedule's runs, newest due time first, after the cursor's due time. */
  runs(scheduleId: string, limit: number, beforeDueAt: number | undefined): ScheduleRun[] {
    return this.sql
      .exec<RunRow>(
        "SELECT due_at, fired_at, operation_id, skipped, detail, coalesced FROM schedule_runs WHERE schedule_id = ? AND due_at < ? ORDER BY due_at DESC LIMIT ?",
        scheduleId,
        beforeDueAt ?? Number.MAX_SAFE_INTEGER,
        limit,
      )
      .toArray()
      .map((row) => ({
        dueAt: row.due_at,
        firedAt: row.fired_at,
        ...(row.operation_id !== null && { operationId: row.operation_id }),
        ...(row.skipped !== null && { skipped: row.skipped as ScheduleSkipReason }),
        ...(row.detail !== null && { detail: row.detail }),
        ...(row.coalesced > 0 && { coalesced: row.coalesced }),
      }));
  }

  private register(scheduleId: string, removal: boolean): number {
    const forwardAt = this.clock() + FORWARD_SAFETY_NET_MS;
    this.sql.exec(
      `INSERT INTO schedule_registrations (schedule_id, removal, forward_at, version) VALUES (?, ?, ?, 1)
       ON CONFLICT (schedule_id) DO UPDATE SET removal = excluded.removal, forward_at = excluded.forward_at, version = version + 1`,
      scheduleId,
      removal ? 1 : 0,
      forwardAt,
    );
    return forwardAt;
  }

  earliestRegistration(): number | undefined {
    return this.sql.exec<{ due: number | null }>("SELECT MIN(forward_at) AS due FROM schedule_registrations").one().due ?? undefined;
  }

  pendingRegistrations(limit: number): RegistrationRow[] {
    return this.sql.exec<RegistrationRow>("SELECT schedule_id, removal, version FROM schedule_registrations ORDER BY forward_at, schedule_id LIMIT ?", limit).toArray();
  }

  /** The shard has these: their rows go, unless the schedule changed again meanwhile (a newer version is still to be forwarded). */
  forwarded(rows: readonly RegistrationRow[]): void {
    for (const row of rows) this.sql.exec("DELETE FROM schedule_registrations WHERE schedule_id = ? AND version = ?", row.schedule_id, row.version);
  }

  postponeRegistrations(rows: readonly RegistrationRow[], delayMs: number): void {
    const at = this.clock() + delayMs;
    for (const row of rows) this.sql.exec("UPDATE schedule_registrations SET forward_at = ? WHERE schedule_id = ?", at, row.schedule_id);
  }
}

function fromRow(row: Row): StoredSchedule {
  return {
    id: row.id,
    lane: row.lane,
    timing: JSON.parse(row.timing) as ScheduleTiming,
    timezone: row.timezone,
    anchor: row.anchor,
    prompt: row.prompt,
    ifBusy: row.if_busy as ScheduleIfBusy,
    paused: row.paused === 1,
    nextRunAt: row.next_run_at ?? undefined,
    lastRun: row.last_run === null ? undefined : (JSON.parse(row.last_run) as ScheduleLastRun),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    bodyHash: row.body_hash,
  };
}

/** A stored schedule as the API answers it. */
export function scheduleView(sessionId: string, schedule: StoredSchedule): Schedule {
  return {
    id: schedule.id,
    sessionId,
    lane: schedule.lane,
    ...schedule.timing,
    timezone: schedule.timezone,
    prompt: schedule.prompt,
    ifBusy: schedule.ifBusy,
    paused: schedule.paused,
    nextRunAt: schedule.paused ? null : (schedule.nextRunAt ?? null),
    lastRun: schedule.lastRun ?? null,
    createdAt: schedule.createdAt,
    updatedAt: schedule.updatedAt,
  };
}
