import type { ScheduleRegistration } from "../../deferred-index/schedule-index.ts";
import { shardOf } from "../due-work/deferred-registrations.ts";
import { SerialRerun } from "../due-work/serial-rerun.ts";
import { FORWARD_RETRY_MS } from "../due-work/settlement-outbox.ts";
import type { SessionHost } from "../session-host.ts";
import { scheduleView, type RegistrationRow } from "./schedule-store.ts";

type RegistrarHost = Pick<SessionHost, "env" | "existingStorage" | "dueWork" | "schema">;

const BATCH = 50;

/**
 * Forwards a session's schedule registrations and removals to its DeferredIndex shard (the shard
 * its name hashes to, as for deferred runs) and to its tenant's count of schedules after the
 * commit that wrote them, and on every alarm
 * until the shard has them: one forward per creation, edit or deletion, none per firing (the
 * shard computes a listed schedule's next run from its timing, and the sweep's reports refresh
 * it). The forward reads the schedule as it is then, so a later edit is never overtaken by an
 * older one; a row changed while its forward was on the way stays for the next forward.
 */
export class ScheduleRegistrar {
  private readonly serial = new SerialRerun(() => this.forwardAll());

  constructor(private readonly host: RegistrarHost) {}

  kick(): Promise<void> {
    return this.serial.kick();
  }

  private async forwardAll(): Promise<void> {
    for (;;) {
      const storage = this.host.schema.exists ? this.host.existingStorage() : undefined;
      if (!storage) return;
      const store = this.host.dueWork.schedules;
      const rows = store.pendingRegistrations(BATCH);
      if (rows.length === 0) return;
      const session = `${storage.tenantId}:${storage.metadata.id}`;
      const registered: ScheduleRegistration[] = [];
      const removed: string[] = [];
      for (const row of rows) {
        const schedule = row.removal === 1 ? undefined : store.get(row.schedule_id);
        if (!schedule) {
          removed.push(row.schedule_id);
          continue;
        }
        const { lastRun: _lastRun, nextRunAt: _nextRunAt, ...definition } = scheduleView(storage.metadata.id, schedule);
        registered.push({ session, tenantId: storage.tenantId, definition, anchor: schedule.anchor, nextRunAt: schedule.nextRunAt ?? null });
      }
      const shard = this.host.env.DEFERRED_INDEX.getByName(shardOf(session));
      // The tenant's count of schedules (tenant/schedule-claims.ts) learns the same, as durably.
      const tenant = this.host.env.TENANTS.getByName(storage.tenantId);
      const registeredIds = registered.map((entry) => entry.definition.id);
      try {
        await Promise.all([
          registered.length > 0 && shard.registerSchedules(registered),
          removed.length > 0 && shard.removeSchedules(session, removed),
          tenant.schedulesRegistered(storage.metadata.id, registeredIds, removed),
        ]);
      } catch (error) {
        this.settle(rows, true);
        throw error;
      }
      this.settle(rows, false);
      if (rows.length < BATCH) return;
    }
  }

  private settle(rows: readonly RegistrationRow[], failed: boolean): void {
    if (!this.host.schema.exists) return;
    const store = this.host.dueWork.schedules;
    if (failed) store.postponeRegistrations(rows, FORWARD_RETRY_MS);
    else store.forwarded(rows);
    this.host.dueWork.rearm();
  }
}
