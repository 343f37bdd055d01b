import type { Usage } from "../../schema/usage.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import type { SettledOperation } from "../session/due-work/settlement-outbox.ts";
import type { ForwardedUsage } from "../session/due-work/usage-outbox.ts";
import { settledEvent, suspendedEvent, type EnqueuedEvent, type SuspendedRun } from "./webhooks/webhook-events.ts";
import { SessionIndex } from "./tenant-listings.ts";
import { SessionUsageMarks } from "./session-usage-marks.ts";
import type { Reservation } from "./tenant-operations.ts";
import type { TenantHost } from "./tenant-host.ts";
import type { GrantedSlot } from "../session/held-slots.ts";

/** Lanes one settlement forward may ask a held slot for (a session's forward carries its own lanes). */
const MAX_SLOTS_PER_FORWARD = 16;

/**
 * The tenant's open-operations quota (tenant-operations.ts: a slot reserved before every accept,
 * bound to the accepted operation, freed when it settles), its usage totals, and what its sessions
 * report after their commits (settled operations with their usage, suspended runs), which also
 * enqueues the webhook deliveries those events are subscribed to.
 */
export class OperationsAndUsage {
  constructor(private readonly host: TenantHost) {}

  /**
   * Takes a slot of the open-operations quota for an accept about to be made on `sessionId`/`lane`,
   * in one synchronous turn (D5): expired unbound reservations are dropped, the rest counted.
   */
  async reserveOperation(sessionId: string, lane: string, now = Date.now()): Promise<Reservation> {
    if (!this.host.schema.exists) return { ok: false, openOperations: [] };
    return this.host.operations().reserve(sessionId, lane, this.host.quotas().maxOpenOperations, now, this.host.webhooks().hasEndpoints());
  }

  /**
   * The accept succeeded: the reservation's slot now belongs to `operationId`, of `owner`'s session
   * and lane (counted by them even when the reservation was forgotten meanwhile).
   */
  async bindOperation(reservationId: string, operationId: string, owner?: { sessionId: string; lane: string }): Promise<void> {
    if (this.host.schema.exists) this.host.operations().bind(reservationId, operationId, Date.now(), owner);
  }

  /**
   * A session's settlement outbox forwards its settled operations here (one call per batch, after
   * their commit, repeated after a crash): their open-operation slots are freed (with the worker's
   * reservation the session took over, if any) and one webhook delivery per subscribed endpoint is
   * enqueued. Idempotent: a release is, and an event id is derived from session and operation and
   * remembered longer than a forward may be repeated (webhooks/webhook-event-ids.ts), so a repeated forward
   * enqueues nothing twice. `usage`: the session's usage-ledger rows it has not seen acknowledged,
   * added to the session's sum in the same transaction, each once (session-usage-marks.ts), so the totals
   * stay exact across failed and repeated forwards. `slotsFor`: the session's lanes that want an
   * open-operation slot held for their next prompt (session/held-slots.ts), granted after the
   * release, while half the quota is free (tenant-operations.ts `reserveSpare`).
   */
  async operationsSettled(sessionId: string, operations: SettledOperation[], usage?: ForwardedUsage, slotsFor: readonly string[] = []): Promise<{ slots: GrantedSlot[] }> {
    if (!this.host.schema.exists) return { slots: [] };
    const events = (await Promise.all(operations.map((operation) => settledEvent(sessionId, operation)))).filter(
      (event): event is EnqueuedEvent => event !== undefined,
    );
    // All or nothing: a batch that fails to apply leaves the slots held and the session retries it.
    const now = Date.now();
    const enqueued = this.host.ctx.storage.transactionSync(() => {
      const ledger = this.host.operations();
      // An operation whose slot its session kept for the lane's next prompt holds nothing to free.
      for (const operation of operations) if (!operation.slotKept) ledger.releaseSettled(sessionId, operation.operationId, operation.reservationId, now);
      if (usage) new SessionUsageMarks(this.host.sql).apply(sessionId, usage);
      // A settled operation is the session's activity that retention measures (data-lifecycle.ts).
      if (operations.length > 0) new SessionIndex(this.host.sql).touch(sessionId, now);
      return this.host.webhooks().enqueue(this.host.eventIds().claim(events, now), now);
    });
    // Memory follows the committed transaction: a batch that failed keeps its slots held.
    this.host.operations().forgetPending(operations.map((operation) => operation.reservationId));
    const slots = this.heldSlotsFor(sessionId, slotsFor, now);
    if (enqueued > 0) await this.host.armNoLaterThan(now);
    return { slots };
  }

  private heldSlotsFor(sessionId: string, lanes: readonly string[], now: number): GrantedSlot[] {
    const { maxOpenOperations } = this.host.quotas();
    const webhooks = this.host.webhooks().hasEndpoints();
    const slots: GrantedSlot[] = [];
    for (const lane of lanes.slice(0, MAX_SLOTS_PER_FORWARD)) {
      const granted = this.host.operations().reserveSpare(sessionId, lane, maxOpenOperations, now, webhooks);
      if (granted.ok) slots.push({ lane, reservationId: granted.reservationId, webhooks: granted.webhooks });
    }
    return slots;
  }

  /**
   * A session's suspended runs, forwarded after the suspending commit with their DeferredIndex
   * registration (repeated after a crash): one `operation.suspended` delivery per subscribed
   * endpoint, idempotent by event id (webhooks/webhook-event-ids.ts).
   */
  async operationsSuspended(sessionId: string, runs: SuspendedRun[]): Promise<void> {
    if (!this.host.schema.exists) return;
    const now = Date.now();
    const events = await Promise.all(runs.map((run) => suspendedEvent(sessionId, run, now)));
    const enqueued = this.host.ctx.storage.transactionSync(() => this.host.webhooks().enqueue(this.host.eventIds().claim(events, now), now));
    if (enqueued > 0) await this.host.armNoLaterThan(now);
  }

  /** Open operations now: bound operations and accepts in flight (not the slots sessions hold ahead). */
  async openOperationCount(): Promise<number> {
    return this.host.schema.exists ? this.host.operations().openCount() : 0;
  }

  /** Frees a reservation not bound yet (the accept failed, or a held slot went unused). */
  async releaseReservation(reservationId: string): Promise<void> {
    if (this.host.schema.exists) this.host.operations().releaseReservation(reservationId);
  }

  /** Frees the slot of a session's operation (it settled, or it was found stale). */
  async releaseOperation(sessionId: string, operationId: string): Promise<void> {
    if (this.host.schema.exists) this.host.operations().release(sessionId, operationId, Date.now());
  }

  async usageTotals(): Promise<Usage> {
    return this.host.schema.exists ? new SessionUsageMarks(this.host.sql).totals() : zeroUsage();
  }
}
