import type { WakeScheduler } from "../../../harness/runtime/core.ts";
import { DeferredRegistrations } from "./deferred-registrations.ts";
import { SettlementOutbox } from "./settlement-outbox.ts";
import { UsageOutbox } from "./usage-outbox.ts";
import { ScheduleStore } from "../schedules/schedule-store.ts";
import { idText, storedId } from "../storage/stored-ids.ts";
import { laneStatePrefix, operationMetaPrefix } from "../../../harness/session/builtin-addresses.ts";

/** The storage slice the schedule needs: synchronous SQL plus the object's one alarm. */
export interface AlarmHost {
  readonly sql: SqlStorage;
  setAlarm(scheduledTime: number): Promise<void>;
  deleteAlarm(): Promise<void>;
  getAlarm(): Promise<number | null>;
}

/**
 * The alarm time for work due at `at`: the platform refuses a time at or before 0 (a one-off
 * schedule `at: 0`, the epoch, is a time already past), and any past time fires at once.
 */
const alarmTime = (at: number): number => Math.max(at, 1);

/** How long a live pass runs before the alarm checks on it (it then joins the pass, harmlessly). */
export const SAFETY_NET_MS = 5_000;

/** What a commit wrote for the host to forward after it: a settlement, or a shard registration or removal. */
export type RecordedWork = "settled" | "registrations";

export type DueRow = {
  operation_id: string;
  lane: string;
  due_at: number;
};

/**
 * Due drive passes multiplexed onto the single alarm (ARCHITECTURE D7; the agents/tldraw pattern
 * of cloudflare-platform §1.6). The engine calls `due`/`settled` synchronously inside the commit
 * that changed the operation, so the row and the session write land in the same atomic batch: a
 * restarted object can never forget an open operation.
 */
export class DueWork implements WakeScheduler {
  /** Settled operations not yet told to the tenant; the one alarm also covers them. */
  readonly outbox: SettlementOutbox;
  /** Suspended runs not yet registered with their DeferredIndex shard; the alarm covers them too. */
  readonly registrations: DeferredRegistrations;
  /** Usage-ledger rows not yet acknowledged by the tenant; the alarm retries a failed forward of them. */
  readonly usage: UsageOutbox;
  /** The lane's schedules: their next runs and unforwarded registrations share the one alarm too. */
  readonly schedules: ScheduleStore;
  /** When the alarm is armed to fire, as far as this instance knows (undefined: none known). */
  private armedAt: number | undefined;

  constructor(
    private readonly host: AlarmHost,
    private readonly clock: () => number = Date.now,
    /**
     * Told synchronously, inside the committing mutation, that an operation settled (or its row
     * was dropped) and its outbox row is written, or that a run's registration with its shard (or
     * its removal, when it settled) is written. It must not await or throw: the host starts its
     * forward after the commit.
     */
    private readonly onRecorded: (what: RecordedWork) => void = () => {},
  ) {
    this.outbox = new SettlementOutbox(host.sql, clock);
    this.registrations = new DeferredRegistrations(host.sql, clock);
    this.usage = new UsageOutbox(host.sql, clock);
    this.schedules = new ScheduleStore(host.sql, clock);
  }

  /**
   * Stores what the tenant acknowledged since the last commit: outbox rows are deleted and the
   * usage mark moves. Synchronous, so inside a mutation it joins that mutation's commit.
   */
  flushAcknowledged(): void {
    this.outbox.dropAcknowledged();
    this.usage.persistAcknowledged();
  }

  /**
   * Work due "now" is being driven by a live pass already; the alarm is only the safety net for a
   * pass that dies, so it is armed a little later instead of firing at once beside the live pass.
   *
   * Only work due later (a retry wait, a client call's deadline) is a row. Work due now is every
   * open operation's by nature: the alarm drives each lane's open operation (session-runtime.ts
   * runDue; a parked or suspended one answers its wait without writing), and a restarted object
   * arms the alarm whenever an operation is open (`ensureArmed`). A row for it was inserted and
   * deleted again within each turn: two rows written of a simple turn's bill (QUALITY P12).
   */
  due(lane: string, operationId: string, at: number): void {
    const now = this.clock();
    if (at <= now) {
      // A row left by an earlier wait of the operation would only bring the alarm back early.
      this.host.sql.exec("DELETE FROM due_work WHERE operation_id = ?", storedId(operationId));
      this.flushAcknowledged();
      this.wantAlarmBy(now + SAFETY_NET_MS);
      return;
    }
    this.schedule(lane, operationId, at);
    this.flushAcknowledged();
    this.wantAlarmBy(at);
  }

  private schedule(lane: string, operationId: string, at: number): void {
    this.host.sql.exec(
      `INSERT INTO due_work (operation_id, lane, due_at) VALUES (?, ?, ?)
       ON CONFLICT (operation_id) DO UPDATE SET due_at = excluded.due_at, lane = excluded.lane`,
      storedId(operationId),
      lane,
      at,
    );
  }

  /**
   * The outbox row lands in the same atomic batch as the settling commit (no await in between), so
   * the tenant's slot release and webhooks survive any crash after the commit.
   */
  settled(lane: string, operationId: string): void {
    this.host.sql.exec("DELETE FROM due_work WHERE operation_id = ?", storedId(operationId));
    this.flushAcknowledged();
    const forwardBy = this.outbox.record(lane, operationId);
    if (forwardBy !== undefined) this.wantAlarmBy(forwardBy);
    this.notify("settled");
    // A run that suspended leaves its DeferredIndex shard with this commit (D8): its registration
    // becomes a removal, forwarded like it.
    const unregisterBy = this.registrations.unregister(operationId);
    if (unregisterBy === undefined) return;
    this.wantAlarmBy(unregisterBy);
    this.notify("registrations");
  }

  /**
   * A run suspended on a deferred response (D8): nothing is due here; its registration with the
   * DeferredIndex shard lands in the suspending commit's batch and is forwarded after it.
   */
  suspended(lane: string, operationId: string, pollAt: number): void {
    this.host.sql.exec("DELETE FROM due_work WHERE operation_id = ?", storedId(operationId));
    this.flushAcknowledged();
    this.wantAlarmBy(this.registrations.record(lane, operationId, pollAt));
    this.notify("registrations");
  }

  private notify(what: RecordedWork): void {
    try {
      this.onRecorded(what);
    } catch {
      // A notification is best-effort; it must never break the commit that settled the operation.
    }
  }

  /** Waiting for an outside event (a client's tool result), the operation holds no row; it stays open. */
  parked(_lane: string, operationId: string): void {
    this.host.sql.exec("DELETE FROM due_work WHERE operation_id = ?", storedId(operationId));
    this.flushAcknowledged();
  }

  /**
   * Whether an operation is open (its lane state holds it until its settling commit, or an earlier
   * build's meta value exists): then work may be due that no row records, and a restarted object
   * arms the alarm for it. A lane state too large to stay inline is taken to hold one (the alarm
   * then finds nothing to do, at worst).
   */
  hasOpenOperations(): boolean {
    return (
      this.host.sql
        .exec(
          `SELECT 1 FROM vals WHERE namespace = ?1
             OR (namespace = ?2 AND (chunks > 0 OR json_extract(value, '$.o') IS NOT NULL)) LIMIT 1`,
          operationMetaPrefix().namespace,
          laneStatePrefix().namespace,
        )
        .toArray().length > 0
    );
  }

  /** Every operation scheduled for later (one per lane at most), earliest first. */
  all(): DueRow[] {
    return this.host.sql.exec<DueRow>(`SELECT ${idText("operation_id")} AS operation_id, lane, due_at FROM due_work ORDER BY due_at`).toArray();
  }

  /** The earliest time the alarm is wanted: due drive passes, outbox rows and a usage retry share it. */
  earliest(): number | undefined {
    const row = this.host.sql.exec<{ due: number | null }>("SELECT MIN(due_at) AS due FROM due_work").one();
    const times = [row.due ?? undefined, this.outbox.earliest(), this.registrations.earliest(), this.usage.retryAt(), this.schedules.earliestDue(), this.schedules.earliestRegistration()].filter((time): time is number => time !== undefined);
    return times.length === 0 ? undefined : Math.min(...times);
  }

  /** A schedule's next run or registration was written at `at` in this turn: the alarm covers it. */
  alarmBy(at: number): void {
    this.wantAlarmBy(at);
  }

  /** Schedules an operation `delayMs` from now (a pass that failed is retried later, not in a hot loop). */
  postpone(lane: string, operationId: string, delayMs: number): void {
    this.schedule(lane, operationId, this.clock() + delayMs);
  }

  forget(operationId: string): void {
    this.settled("", operationId);
  }

  /**
   * Makes sure the alarm fires no later than the earliest due row, and otherwise leaves it alone.
   * Moving the alarm earlier is a write the platform makes durable before the commit that carries
   * it (an extra flush on the turn's answer, measured ~1.2 ms under `wrangler dev`); moving it later
   * or deleting it is one more write after. So an alarm already armed at or before what is due is
   * kept, and an alarm with nothing left to do is not deleted: it fires once, finds nothing (the
   * alarm body is idempotent under early firing) and is not re-armed. A turn that arms its safety
   * net `SAFETY_NET_MS` ahead therefore writes no alarm while an earlier turn's alarm is pending.
   */
  rearm(): void {
    const earliest = this.earliest();
    if (earliest !== undefined) this.armNoLaterThan(earliest);
  }

  /**
   * Something was just scheduled at `at`. Every row is written through this class and the alarm is
   * only ever moved earlier, so a known alarm at or before `at` already covers it: the turn reads
   * no schedule table to find out. Only an instance that knows of no alarm (fresh, or its alarm was
   * just delivered) looks at every table, and arms for the earlier of them and `at` (work due now
   * is in no table: `due`).
   */
  private wantAlarmBy(at: number): void {
    const earliest = this.armedAt === undefined ? this.earliest() : undefined;
    this.armNoLaterThan(earliest === undefined ? at : Math.min(at, earliest));
  }

  /** Moves the known alarm earlier to `at`, or leaves it where it is when it fires by then. */
  private armNoLaterThan(due: number): void {
    const at = alarmTime(due);
    if (this.armedAt !== undefined && this.armedAt <= at) return;
    this.armedAt = at;
    // Storage operations need no await to be ordered and durable with the current batch.
    void this.host.setAlarm(at);
  }

  /** The alarm was delivered: the platform holds none now (the body re-arms for what is left). */
  alarmDelivered(): void {
    this.armedAt = undefined;
  }

  /** The session is being deleted: no alarm, and nothing to arm one for. */
  async disarm(): Promise<void> {
    this.armedAt = undefined;
    this.usage.forget();
    this.outbox.forget();
    await this.host.deleteAlarm();
  }

  /**
   * When a restarted object wants its alarm: the earliest scheduled time, else now when an
   * operation is open (a pass that died with the object: work due now has no row, `due`).
   */
  restartAlarmAt(): number | undefined {
    return this.earliest() ?? (this.hasOpenOperations() ? this.clock() : undefined);
  }

  /** After a restart: make sure an alarm exists whenever due work does (agents#1119), by `earliest`. */
  async ensureArmed(due = this.restartAlarmAt()): Promise<void> {
    if (due === undefined) return;
    const earliest = alarmTime(due);
    const armed = await this.host.getAlarm();
    if (armed !== null && armed <= earliest) {
      this.armedAt = armed;
      return;
    }
    this.armedAt = earliest;
    await this.host.setAlarm(earliest);
  }
}
