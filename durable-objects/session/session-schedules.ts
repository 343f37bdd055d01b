import { createHash } from "node:crypto";
import type { RpcResult } from "../../schema/errors.ts";
import { MAX_SCHEDULES_PER_LANE, type CreateSchedule, type PatchSchedule, type Schedule, type ScheduleRun, type ScheduleTiming } from "../../schema/schedules.ts";
import type { Wire } from "../../schema/wire.ts";
import { once, type ReceiptScope } from "../rpc/idempotency.ts";
import { asResult, parseWire, RpcError } from "../rpc/rpc-errors.ts";
import { ScheduleFiring, type FiringTargets } from "./schedules/schedule-firing.ts";
import { ScheduleRegistrar } from "./schedules/schedule-registrar.ts";
import { scheduleView, type StoredSchedule } from "./schedules/schedule-store.ts";
import { firstDue } from "./schedules/schedule-times.ts";
import type { SessionHost } from "./session-host.ts";

type SchedulesHost = Pick<SessionHost, "ctx" | "env" | "existingStorage" | "harness" | "dueWork" | "schema" | "open">;

/** What the cron's sweep learns from a session: its schedules' next runs, or that it holds no session. */
export type ScheduleSweepAnswer = { gone: true } | { gone: false; nextRuns: { scheduleId: string; nextRunAt: number | null }[] };

/**
 * A lane's schedules over RPC (spec/API.md "Schedules"): creation, listing, edits, deletion and
 * runs, the alarm's firing of due ones (schedules/schedule-firing.ts) and the cron sweep's wake-up.
 * Each change writes the schedule, its next due time (the session's one alarm covers it:
 * due-work.ts) and its registration with the DeferredIndex shard in one synchronous turn; the
 * registration is forwarded after the commit (schedules/schedule-registrar.ts).
 */
export class SessionSchedules {
  private readonly firing: ScheduleFiring;
  private readonly registrar: ScheduleRegistrar;

  constructor(
    private readonly host: SchedulesHost,
    targets: FiringTargets,
  ) {
    this.firing = new ScheduleFiring(host, targets);
    this.registrar = new ScheduleRegistrar(host);
  }

  /** `POST …/schedules`: 201 a new schedule, or the same one again for a repeat of its creation (same id and body). */
  async createSchedule(lane: string, body: Wire<CreateSchedule>, receipt?: ReceiptScope): Promise<Wire<RpcResult<{ schedule: Schedule; created: boolean }>>> {
    return asResult(async () => {
      const input = parseWire(body);
      const sessionId = await this.laneOf(lane);
      // Created once per claimed key (rpc/idempotency.ts): a repeat after a crash answers the first schedule.
      return once(this.host.ctx.storage.sql, receipt, async () => {
        const id = input.id ?? `sch_${crypto.randomUUID().replaceAll("-", "")}`;
        // A repeat of a creation, or a refusal, needs no claim: answered before asking the tenant.
        const repeated = this.repeatOrRefusal(lane, sessionId, input, id);
        if (repeated) return repeated;
        const claim = await this.claimOnTenant(sessionId, id);
        try {
          // Checked again after the tenant's answer: the lane may have changed meanwhile.
          return this.create(lane, sessionId, input, id);
        } catch (error) {
          if (claim.fresh) void this.tenant().releaseScheduleClaim(sessionId, id).catch(() => undefined);
          throw error;
        }
      });
    });
  }

  /** The tenant's count of schedules (its `maxSchedules`, durable-objects/tenant/schedule-claims.ts). */
  private async claimOnTenant(sessionId: string, id: string): Promise<{ fresh: boolean }> {
    const claim = await this.tenant().claimSchedule(sessionId, id);
    if (claim.ok) return claim;
    if (claim.refusal === "tenantDeleting") throw new RpcError({ code: "TenantDeleting", message: "The tenant is being deleted" });
    throw new RpcError({ code: "LimitExceeded", message: `The tenant's sessions already hold ${claim.limit} schedules, the most they may together`, details: { resource: "schedules_per_tenant", limit: claim.limit } });
  }

  private tenant() {
    return this.host.env.TENANTS.getByName(this.host.open().storage.tenantId);
  }

  /**
   * The schedule `id` as it exists already for a repeat of its creation (same body); undefined
   * when it is new. Throws when the id is taken by another body or the lane is full.
   */
  private repeatOrRefusal(lane: string, sessionId: string, input: CreateSchedule, id: string): { schedule: Schedule; created: false } | undefined {
    const store = this.host.dueWork.schedules;
    const existing = store.get(id);
    if (existing) {
      if (existing.bodyHash !== bodyHashOf(lane, input)) throw new RpcError({ code: "ScheduleExists", message: `Schedule ${existing.id} exists with another definition`, details: { scheduleId: existing.id, lane: existing.lane } });
      return { schedule: scheduleView(sessionId, existing), created: false };
    }
    const held = store.countOnLane(lane);
    if (held >= MAX_SCHEDULES_PER_LANE) {
      throw new RpcError({ code: "LimitExceeded", message: `Lane ${lane} already holds ${MAX_SCHEDULES_PER_LANE} schedules, the most it may`, details: { resource: "schedules_per_lane", limit: MAX_SCHEDULES_PER_LANE } });
    }
    return undefined;
  }

  /** Writes schedule `id` (one synchronous turn with its checks), or answers the one a repeat names. */
  private create(lane: string, sessionId: string, input: CreateSchedule, id: string): { schedule: Schedule; created: boolean } {
    const repeated = this.repeatOrRefusal(lane, sessionId, input, id);
    if (repeated) return repeated;
    const bodyHash = bodyHashOf(lane, input);
    const now = Date.now();
    const spec = { timing: timingOf(input), timezone: input.timezone ?? "UTC", anchor: now };
    const schedule: StoredSchedule = {
      id,
      lane,
      ...spec,
      prompt: input.prompt,
      ifBusy: input.ifBusy ?? "reject",
      paused: false,
      nextRunAt: firstDue(spec, now),
      lastRun: undefined,
      createdAt: now,
      updatedAt: now,
      bodyHash,
    };
    this.write(schedule);
    return { schedule: scheduleView(sessionId, schedule), created: true };
  }

  /** A lane's schedules (at most MAX_SCHEDULES_PER_LANE: one page). */
  async laneSchedules(lane: string): Promise<Wire<RpcResult<Schedule[]>>> {
    return asResult(async () => {
      const sessionId = await this.laneOf(lane);
      return this.host.dueWork.schedules.onLane(lane).map((schedule) => scheduleView(sessionId, schedule));
    });
  }

  async getSchedule(lane: string, id: string): Promise<Wire<RpcResult<Schedule>>> {
    return asResult(async () => {
      const sessionId = await this.laneOf(lane);
      return scheduleView(sessionId, this.scheduleOn(lane, id));
    });
  }

  /**
   * `PATCH …/schedules/{id}`: a new timing or time zone recomputes the next due time from now (an
   * interval counts from now); pausing keeps it, so a resumed schedule whose due time passed
   * meanwhile fires once at resumption (the missed due times coalesce into that run).
   */
  async patchSchedule(lane: string, id: string, body: Wire<PatchSchedule>): Promise<Wire<RpcResult<Schedule>>> {
    return asResult(async () => {
      const patch = parseWire(body);
      const sessionId = await this.laneOf(lane);
      const current = this.scheduleOn(lane, id);
      const now = Date.now();
      // A one-off's `at` is an instant: a new time zone alone leaves it (and a one-off that ran, done).
      const rezoned = patch.timezone !== undefined && patch.timezone !== current.timezone && !("at" in current.timing);
      const retimed = patch.cron !== undefined || patch.at !== undefined || patch.everySeconds !== undefined || rezoned;
      const spec = retimed ? { timing: patch.cron !== undefined || patch.at !== undefined || patch.everySeconds !== undefined ? timingOf(patch) : current.timing, timezone: patch.timezone ?? current.timezone, anchor: now } : current;
      const next: StoredSchedule = {
        ...current,
        timing: spec.timing,
        timezone: spec.timezone,
        anchor: spec.anchor,
        prompt: patch.prompt ?? current.prompt,
        ifBusy: patch.ifBusy ?? current.ifBusy,
        paused: patch.paused ?? current.paused,
        nextRunAt: retimed ? firstDue(spec, now) : current.nextRunAt,
        updatedAt: now,
      };
      this.write(next);
      return scheduleView(sessionId, next);
    });
  }

  async deleteSchedule(lane: string, id: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(async () => {
      const sessionId = await this.laneOf(lane);
      this.scheduleOn(lane, id);
      const forwardAt = this.host.dueWork.schedules.delete(id);
      this.host.dueWork.alarmBy(forwardAt);
      this.forwardAfterCommit();
      // Its place in the tenant's count is free when the answer arrives (a creation may follow at
      // once); the forward tells the tenant again, durably, should this call be lost.
      await this.tenant().schedulesRegistered(sessionId, [], [id]).catch(() => undefined);
      return { deleted: true as const };
    });
  }

  /** A schedule's runs, newest due time first; the cursor is the last due time answered. */
  async scheduleRuns(lane: string, id: string, limit: number, beforeDueAt: number | undefined): Promise<Wire<RpcResult<{ items: ScheduleRun[]; nextCursor: string | null }>>> {
    return asResult(async () => {
      await this.laneOf(lane);
      this.scheduleOn(lane, id);
      // One row more than the page says whether another page exists (null on the last, as every listing).
      const read = this.host.dueWork.schedules.runs(id, limit + 1, beforeDueAt);
      const items = read.slice(0, limit);
      const last = items.at(-1);
      return { items, nextCursor: read.length > limit && last ? String(last.dueAt) : null };
    });
  }

  /** The alarm: due schedules fire, and unforwarded registrations go to the shard. */
  async alarm(): Promise<void> {
    await Promise.all([this.firing.fireDue(), this.registrar.kick().catch(() => undefined)]);
  }

  /**
   * The cron's safety net (worker/schedule-sweep.ts): a session whose schedule is overdue in the
   * index is woken here, fires what is due, makes sure its alarm is armed again, and answers its
   * schedules' next runs for the index.
   */
  async sweepSchedules(): Promise<ScheduleSweepAnswer> {
    if (!this.host.existingStorage()) return { gone: true };
    await this.alarm();
    if (!this.host.schema.exists) return { gone: true };
    await this.host.dueWork.ensureArmed();
    return { gone: false, nextRuns: this.host.dueWork.schedules.nextRuns() };
  }

  /** The session's id once the lane is known to exist (404 SessionNotFound or UnknownLane otherwise). */
  private async laneOf(lane: string): Promise<string> {
    const { storage } = this.host.open();
    if (!(await this.host.harness()).getLane(lane)) throw new RpcError({ code: "UnknownLane", message: `Lane "${lane}" does not exist` });
    return storage.metadata.id;
  }

  private scheduleOn(lane: string, id: string): StoredSchedule {
    const schedule = this.host.dueWork.schedules.get(id);
    if (!schedule || schedule.lane !== lane) throw new RpcError({ code: "ScheduleNotFound", message: `No schedule ${id} on lane ${lane}`, details: { scheduleId: id } });
    return schedule;
  }

  /** The schedule, its next due time and its registration in this turn; the alarm covers both. */
  private write(schedule: StoredSchedule): void {
    const forwardAt = this.host.dueWork.schedules.put(schedule);
    this.host.dueWork.alarmBy(schedule.paused || schedule.nextRunAt === undefined ? forwardAt : Math.min(forwardAt, schedule.nextRunAt));
    this.forwardAfterCommit();
  }

  /** The registration goes to the shard once the commit that wrote it is durable (a zero-delay timer runs after it). */
  private forwardAfterCommit(): void {
    setTimeout(() => this.host.ctx.waitUntil(this.registrar.kick().catch(() => undefined)), 0);
  }
}

function timingOf(input: { cron?: string; at?: number; everySeconds?: number }): ScheduleTiming {
  if (input.cron !== undefined) return { cron: input.cron };
  if (input.at !== undefined) return { at: input.at };
  if (input.everySeconds !== undefined) return { everySeconds: input.everySeconds };
  throw new RpcError({ code: "ValidationFailed", message: "body: give exactly one of cron, at, everySeconds" });
}

/** What tells a repeat of a creation (same lane and body, the id aside) from another creation under its id. */
function bodyHashOf(lane: string, input: CreateSchedule): string {
  const { id: _id, ...definition } = input;
  return createHash("sha256").update(JSON.stringify({ lane, ...definition })).digest("hex");
}
