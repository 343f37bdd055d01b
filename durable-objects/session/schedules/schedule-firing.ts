import type { RunRequest } from "../../../harness/runtime/acceptance.ts";
import type { RpcResult } from "../../../schema/errors.ts";
import type { ScheduleRun, ScheduleSkipReason } from "../../../schema/schedules.ts";
import { fromWire, toWire, type Wire } from "../../../schema/wire.ts";
import type { ScheduleDue } from "../../tenant/tenant-schedules.ts";
import type { SessionHost } from "../session-host.ts";
import { SerialRerun } from "../due-work/serial-rerun.ts";
import type { BusyAdmission, BusyStrategy } from "../session-operations.ts";
import { missedBetween, nextDueAfter, scheduledOperationId } from "./schedule-times.ts";
import type { StoredSchedule } from "./schedule-store.ts";

/** What a firing starts a run through: the REST twins' own RPC bodies (session-operations.ts). */
export interface FiringTargets {
  acceptOperation(lane: string, request: Wire<RunRequest>): Promise<Wire<RpcResult<BusyAdmission>>>;
  acceptWhileBusy(lane: string, request: Wire<RunRequest>, ifBusy: BusyStrategy): Promise<Wire<RpcResult<BusyAdmission>>>;
}

type FiringHost = Pick<SessionHost, "env" | "existingStorage" | "harness" | "dueWork" | "schema">;

/** Schedules fired per round of a pass; a pass runs rounds until none is due (at most MAX_ROUNDS). */
const BATCH = 20;
const MAX_ROUNDS = 10;
/** A failed firing is tried again after this long. */
export const RETRY_MS = 30_000;

type Outcome = { operationId: string } | { skipped: ScheduleSkipReason; detail?: string };

/**
 * Starts the runs of due schedules (spec/API.md "Schedules"), from the session's alarm and from the
 * cron's sweep. A due time starts at most one run:
 * - one pass at a time in this object (a second caller joins it, and it goes round once more),
 *   and each schedule is read again after the tenant call and fired only if its due time is still
 *   the one it was called for;
 * - the run's operation id derives from schedule and due time (schedule-times.ts), and a lane
 *   accepts an operation id once, so a due time fired again after a crash finds its operation
 *   instead of starting another;
 * - the run's acceptance, its run row and the schedule's next due time are written with no I/O
 *   between them (the acceptance's commit and the writes after it, in microtasks, share the turn).
 * Due times missed meanwhile (an outage, a late alarm, a pause) coalesce into the one run, which
 * carries the earliest of them (`dueAt`) and counts the others (`coalesced`); the next due time is
 * the first after now.
 */
export class ScheduleFiring {
  // A caller that finds a pass running joins it and makes it look once more: a schedule that came
  // due after the pass read the due ones (its alarm fired meanwhile) is not left for a later alarm.
  private readonly passes = new SerialRerun(() => this.fireAll());

  constructor(
    private readonly host: FiringHost,
    private readonly targets: FiringTargets,
    private readonly clock: () => number = Date.now,
  ) {}

  fireDue(): Promise<void> {
    return this.passes.kick();
  }

  private async fireAll(): Promise<void> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (!this.host.existingStorage()) return;
      const due = this.host.dueWork.schedules.due(this.clock(), BATCH);
      for (const schedule of due) await this.fireOne(schedule.id).catch((error: unknown) => this.failed(schedule.id, error));
      if (due.length < BATCH) return;
    }
  }

  private async fireOne(scheduleId: string): Promise<void> {
    const storage = this.host.existingStorage();
    if (!storage) return;
    // Opening the harness may wait; it is done before the schedule is read.
    const harness = await this.host.harness();
    const store = this.host.dueWork.schedules;
    const schedule = store.get(scheduleId);
    const now = this.clock();
    if (!schedule || schedule.paused || schedule.nextRunAt === undefined || schedule.nextRunAt > now) return;
    const due: ScheduleDue = { scheduleId, lane: schedule.lane, dueAt: schedule.nextRunAt, operationId: scheduledOperationId(schedule, schedule.nextRunAt) };
    const tenant = this.host.env.TENANTS.getByName(storage.tenantId);
    const sessionId = storage.metadata.id;
    const lane = harness.getLane(schedule.lane);
    const skipEarly: ScheduleSkipReason | undefined = !lane ? "lane_gone" : schedule.ifBusy === "reject" && lane.state.operation ? "lane_busy" : undefined;
    if (skipEarly) {
      this.reached(schedule, due, now, { skipped: skipEarly });
      await tenant.scheduleSkipped(sessionId, due, skipEarly, undefined, false).catch(() => undefined);
      return;
    }
    const reservation = await tenant.reserveScheduledRun(sessionId, due);
    // Read again after the tenant call: a deleted session or schedule, a pause, an edit or another
    // firing of this due time meanwhile leaves nothing to start.
    const current = this.host.schema.exists ? store.get(scheduleId) : undefined;
    if (!current || current.paused || current.nextRunAt !== due.dueAt) {
      if (reservation.ok) await tenant.scheduleSkipped(sessionId, due, "refused", "changed_meanwhile", true).catch(() => undefined);
      return;
    }
    if (!reservation.ok) {
      this.reached(current, due, this.clock(), { skipped: reservation.reason, detail: reservation.detail });
      return;
    }
    // A start that fails unexpectedly still reaches its due time (recorded, the slot given back):
    // left due, it would bring the alarm straight back to the same failure.
    const outcome = await this.start(current, due).catch((error: unknown): Outcome => {
      console.warn(JSON.stringify({ event: "schedule_start_failed", scheduleId, dueAt: due.dueAt, error: error instanceof Error ? error.message : String(error) }));
      return { skipped: "refused", detail: "internal_error" };
    });
    this.reached(current, due, this.clock(), outcome);
    if ("skipped" in outcome) await tenant.scheduleSkipped(sessionId, due, outcome.skipped, outcome.detail, true).catch(() => undefined);
    // The run took another id (steer/followUp handed the prompt over), or it settled before this
    // repeated firing, whose reservation then bound a slot no settlement will free.
    else if (outcome.operationId !== due.operationId || harness.getLane(current.lane)?.getResult(due.operationId) !== undefined) {
      await tenant.releaseOperation(sessionId, due.operationId).catch(() => undefined);
    }
  }

  /**
   * A firing that failed before it started anything (the session could not be opened, the tenant
   * object did not answer): the same due time is tried again RETRY_MS later, from the alarm, rather
   * than at once (which would bring the alarm straight back to the failure). A due time whose slot
   * was taken and whose answer was lost binds the same operation id again: still one slot, one run.
   */
  private failed(scheduleId: string, error: unknown): void {
    console.warn(JSON.stringify({ event: "schedule_firing_failed", scheduleId, error: error instanceof Error ? error.message : String(error) }));
    if (!this.host.schema.exists) return;
    const retryAt = this.clock() + RETRY_MS;
    this.host.dueWork.schedules.retryAt(scheduleId, retryAt);
    this.host.dueWork.alarmBy(retryAt);
  }

  /** Accepts the run (or hands the prompt to the running operation under `steer`/`followUp`). */
  private async start(schedule: StoredSchedule, due: ScheduleDue): Promise<Outcome> {
    const request: RunRequest = { kind: "prompt", prompt: schedule.prompt, operationId: due.operationId };
    const answer = fromWire(
      schedule.ifBusy === "reject" ? await this.targets.acceptOperation(schedule.lane, toWire(request)) : await this.targets.acceptWhileBusy(schedule.lane, toWire(request), schedule.ifBusy),
    );
    if (answer.ok) return { operationId: answer.value.operationId };
    switch (answer.error.code) {
      // Accepted before: this due time's run exists (a firing repeated after a crash).
      case "InvalidOperationId":
        return { operationId: due.operationId };
      case "LaneBusy":
        return { skipped: "lane_busy" };
      case "UnknownLane":
        return { skipped: "lane_gone" };
      default:
        return { skipped: "refused", detail: answer.error.code };
    }
  }

  /** The due time's run recorded and the schedule's next due time stored (the first after now). */
  private reached(schedule: StoredSchedule, due: ScheduleDue, now: number, outcome: Outcome): void {
    const coalesced = missedBetween(schedule, due.dueAt, now);
    const run: ScheduleRun = { dueAt: due.dueAt, firedAt: now, ...outcome, ...(coalesced > 0 && { coalesced }) };
    this.host.dueWork.schedules.reached(schedule, run, nextDueAfter(schedule, now));
    this.host.dueWork.rearm();
  }
}
