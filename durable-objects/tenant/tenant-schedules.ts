import type { WebhookEvent, WebhookEventType } from "../../schema/webhooks.ts";
import type { ScheduleSkipReason } from "../../schema/schedules.ts";
import type { TenantHost } from "./tenant-host.ts";
import type { EnqueuedEvent } from "./webhooks/webhook-events.ts";
import { sha256Hex } from "./tenant-keys.ts";
import { ScheduleClaims, type ScheduleClaim } from "./schedule-claims.ts";

/** One due time of a schedule, as its session tells the tenant. */
export interface ScheduleDue {
  scheduleId: string;
  lane: string;
  dueAt: number;
  /** The run's derived operation id (schedule-times.ts scheduledOperationId). */
  operationId: string;
}

/** The slot of a scheduled run (bound to its operation id), or the quota that refused it (its `schedule.skipped` is enqueued already). */
export type ScheduledReservation = { ok: true } | { ok: false; reason: "quota" | "refused"; detail: string };

/**
 * The tenant's side of schedules (spec/API.md "Schedules"): a due time's run counts against the
 * quotas like an API run, and its webhook event is enqueued in the same call, so a fired run costs
 * its session one tenant call (QUALITY P13): `reserveScheduledRun` spends one request of the
 * minute's quota, takes an open-operation slot bound at once to the run's operation id (known
 * ahead: it derives from schedule and due time), which the session's settlement forward frees like
 * any operation's, and enqueues `schedule.fired`; or, refused, enqueues `schedule.skipped` (reason
 * `quota`). A run that could not start after all (the lane turned busy meanwhile) gives its slot
 * back with `scheduleSkipped`, which enqueues the skip. A repeated call for the same due time binds
 * the same operation id (one slot) and enqueues nothing twice (event ids derive from session,
 * schedule and due time).
 */
export class TenantSchedules {
  constructor(private readonly host: TenantHost) {}

  /**
   * A schedule's creation, before its session writes it: within the tenant's `maxSchedules`
   * (schedule-claims.ts). Refused for a tenant gone or being deleted, as a creation is.
   */
  async claimSchedule(sessionId: string, scheduleId: string, now = Date.now()): Promise<ScheduleClaim> {
    if (!this.host.schema.exists || this.host.deletion()) return { ok: false, refusal: "tenantDeleting" };
    const { maxSchedules } = this.host.quotas();
    return new ScheduleClaims(this.host.sql).claim(sessionId, scheduleId, maxSchedules, now);
  }

  /** A creation refused after its claim (its lane full, its id taken): the claim is given back. */
  async releaseScheduleClaim(sessionId: string, scheduleId: string): Promise<void> {
    if (this.host.schema.exists) new ScheduleClaims(this.host.sql).release(sessionId, scheduleId);
  }

  /** The session's registration forward (schedule-registrar.ts): what exists is held, what was removed is dropped. */
  async schedulesRegistered(sessionId: string, scheduleIds: readonly string[], removedIds: readonly string[]): Promise<void> {
    if (this.host.schema.exists) new ScheduleClaims(this.host.sql).registered(sessionId, scheduleIds, removedIds);
  }

  async reserveScheduledRun(sessionId: string, due: ScheduleDue, now = Date.now()): Promise<ScheduledReservation> {
    // The event ids are digests: computed before the writing turn, which reads everything else.
    const firedId = await scheduleEventId("schedule.fired", sessionId, due);
    const skippedId = await scheduleEventId("schedule.skipped", sessionId, due);
    if (!this.host.schema.exists) return { ok: false, reason: "quota", detail: "tenant_gone" };
    // A tenant being deleted starts nothing new (its keys are already refused); its sessions go soon.
    if (this.host.deletion()) return { ok: false, reason: "refused", detail: "TenantDeleting" };
    const quotas = this.host.quotas();
    const { outcome, enqueued } = this.host.ctx.storage.transactionSync((): { outcome: ScheduledReservation; enqueued: number } => {
      const grant = this.host.requestWindow.grant(now, quotas.requestsPerMinute, 1);
      const refusal = grant.limited ? "requestsPerMinute" : undefined;
      const reservation = refusal ? undefined : this.host.operations().reserve(sessionId, due.lane, quotas.maxOpenOperations, now, this.host.webhooks().hasEndpoints());
      if (reservation?.ok) {
        this.host.operations().bind(reservation.reservationId, due.operationId, now);
        return { outcome: { ok: true }, enqueued: this.enqueue(scheduleEvent(firedId, sessionId, due, now, { operationId: due.operationId }), now) };
      }
      const detail = refusal ?? "maxOpenOperations";
      return { outcome: { ok: false, reason: "quota", detail }, enqueued: this.enqueue(scheduleEvent(skippedId, sessionId, due, now, { reason: "quota", detail }), now) };
    });
    if (enqueued > 0) await this.host.armNoLaterThan(now);
    return outcome;
  }

  /** A due time started no run: its slot (when `reserved`, bound to the due time's operation id) is freed and `schedule.skipped` enqueued. */
  async scheduleSkipped(sessionId: string, due: ScheduleDue, reason: ScheduleSkipReason, detail: string | undefined, reserved: boolean, now = Date.now()): Promise<void> {
    if (!this.host.schema.exists) return;
    const skipped = scheduleEvent(await scheduleEventId("schedule.skipped", sessionId, due), sessionId, due, now, { reason, ...(detail !== undefined && { detail }) });
    const enqueued = this.host.ctx.storage.transactionSync(() => {
      if (reserved) this.host.operations().release(sessionId, due.operationId, now);
      return this.enqueue(skipped, now);
    });
    if (enqueued > 0) await this.host.armNoLaterThan(now);
  }

  private enqueue(event: EnqueuedEvent, now: number): number {
    return this.host.webhooks().enqueue(this.host.eventIds().claim([event], now), now);
  }
}

type ScheduleExtra = { operationId: string } | { reason: string; detail?: string };

/**
 * One event per schedule, due time and type: a repeated call (a retried firing) enqueues nothing
 * twice. The due time's run id is part of it: it derives from the schedule's creation too
 * (session/schedules/schedule-times.ts), so a schedule (or a session) deleted and created again
 * under its id, firing at a due time the old one fired at, tells its own event.
 */
async function scheduleEventId(type: Extract<WebhookEventType, `schedule.${string}`>, sessionId: string, due: ScheduleDue): Promise<string> {
  return `evt_${(await sha256Hex(`${type}\n${sessionId}\n${due.scheduleId}\n${due.dueAt}\n${due.operationId}`)).slice(0, 32)}`;
}

function scheduleEvent(id: string, sessionId: string, due: ScheduleDue, now: number, extra: ScheduleExtra): EnqueuedEvent {
  const base = { sessionId, lane: due.lane, scheduleId: due.scheduleId, dueAt: due.dueAt };
  const event: WebhookEvent =
    "operationId" in extra
      ? { id, type: "schedule.fired", createdAt: now, data: { ...base, operationId: extra.operationId } }
      : { id, type: "schedule.skipped", createdAt: now, data: { ...base, reason: extra.reason, ...(extra.detail !== undefined && { detail: extra.detail }) } };
  return { id, type: event.type, body: JSON.stringify(event) };
}
