import type { DeferredRegistration } from "../../deferred-index/deferred-index.ts";
import { SerialRerun } from "./serial-rerun.ts";
import { FORWARD_RETRY_MS, FORWARD_SAFETY_NET_MS } from "./settlement-outbox.ts";

/** Shards of the DeferredIndex; a session's runs all go to the shard its name hashes to. */
export const DEFERRED_INDEX_SHARDS = 8;
const BATCH = 50;

type Row = { operation_id: string; lane: string; poll_at: number; unregister: number };

/**
 * Suspended runs' registrations with the session's DeferredIndex shard (ARCHITECTURE D8), and
 * their removals. A row is inserted inside the commit that suspends the run (DueWork.suspended
 * runs in that batch), forwarded after it, and then kept, marked forwarded: the commit that
 * settles the run (or aborts it) finds it and turns it into a removal (DueWork.settled), which is
 * forwarded the same way and deleted once the shard has it. So a run leaves the index in the
 * same logical step as it settles, whatever crashes in between (the row and the alarm armed for
 * it survive; registering or removing twice is harmless). Rows are one per suspended run at
 * most, and none once it settled and the shard heard. Every method is one synchronous SQL turn.
 */
export class DeferredRegistrations {
  constructor(
    private readonly sql: SqlStorage,
    private readonly clock: () => number,
  ) {}

  /** Writes the suspended run's row; answers when the alarm must forward it at the latest. */
  record(lane: string, operationId: string, pollAt: number): number {
    const forwardAt = this.clock() + FORWARD_SAFETY_NET_MS;
    this.sql.exec(
      `INSERT INTO deferred_registrations (operation_id, lane, poll_at, forward_at, unregister, forwarded) VALUES (?, ?, ?, ?, 0, 0)
       ON CONFLICT (operation_id) DO UPDATE SET lane = excluded.lane, poll_at = excluded.poll_at, forward_at = excluded.forward_at, unregister = 0, forwarded = 0`,
      operationId,
      lane,
      pollAt,
      forwardAt,
    );
    return forwardAt;
  }

  /**
   * The operation settled: a registration it made becomes its removal. Answers when the alarm
   * must forward that at the latest, or undefined when the operation never suspended (one lookup
   * by key on a table that holds a row per suspended run; nothing is written then).
   */
  unregister(operationId: string): number | undefined {
    const forwardAt = this.clock() + FORWARD_SAFETY_NET_MS;
    const changed = this.sql
      .exec("UPDATE deferred_registrations SET unregister = 1, forwarded = 0, forward_at = ? WHERE operation_id = ? RETURNING operation_id", forwardAt, operationId)
      .toArray().length;
    return changed > 0 ? forwardAt : undefined;
  }

  earliest(): number | undefined {
    return this.sql.exec<{ due: number | null }>("SELECT MIN(forward_at) AS due FROM deferred_registrations WHERE forwarded = 0").one().due ?? undefined;
  }

  /** Registrations and removals not yet forwarded. */
  pending(limit: number): Row[] {
    return this.sql
      .exec<Row>("SELECT operation_id, lane, poll_at, unregister FROM deferred_registrations WHERE forwarded = 0 ORDER BY poll_at, operation_id LIMIT ?", limit)
      .toArray();
  }

  /**
   * The shard has these rows. A removal is deleted; a registration is kept, marked forwarded,
   * unless the run changed it meanwhile (suspended again at a newer poll time, or settled: then
   * its newer row is still to be forwarded).
   */
  forwarded(rows: readonly Row[]): void {
    for (const row of rows) {
      if (row.unregister === 1) this.sql.exec("DELETE FROM deferred_registrations WHERE operation_id = ? AND unregister = 1", row.operation_id);
      else this.sql.exec("UPDATE deferred_registrations SET forwarded = 1 WHERE operation_id = ? AND poll_at = ? AND unregister = 0 AND forwarded = 0", row.operation_id, row.poll_at);
    }
  }

  postpone(rows: readonly Row[], delayMs: number): void {
    const at = this.clock() + delayMs;
    for (const row of rows) this.sql.exec("UPDATE deferred_registrations SET forward_at = ? WHERE operation_id = ? AND forwarded = 0", at, row.operation_id);
  }
}

export interface RegistrarPorts {
  /** The registrations, or undefined when the object holds no session (deleted meanwhile). */
  registrations(): DeferredRegistrations | undefined;
  /** The session object's name, which the sweep uses to reach it again. */
  sessionName(): string | undefined;
  /** Registers `runs` with the shard and removes `removed` (operation ids); resolves once the shard has them. */
  send(shard: string, runs: DeferredRegistration[], removed: string[]): Promise<void>;
  rearm(): void;
}

/** Forwards registrations and removals to the shard after their commit and on every alarm; one forward at a time. */
export class DeferredRegistrar {
  private readonly serial = new SerialRerun(() => this.forwardAll());

  constructor(private readonly ports: RegistrarPorts) {}

  kick(): Promise<void> {
    return this.serial.kick();
  }

  private async forwardAll(): Promise<void> {
    for (;;) {
      const session = this.ports.sessionName();
      const rows = this.ports.registrations()?.pending(BATCH) ?? [];
      if (!session || rows.length === 0) return;
      const runs = rows.filter((row) => row.unregister === 0).map((row): DeferredRegistration => ({ session, lane: row.lane, operationId: row.operation_id, dueAt: row.poll_at }));
      const removed = rows.filter((row) => row.unregister === 1).map((row) => row.operation_id);
      try {
        await this.ports.send(shardOf(session), runs, removed);
      } catch (error) {
        this.ports.registrations()?.postpone(rows, FORWARD_RETRY_MS);
        this.ports.rearm();
        throw error;
      }
      this.ports.registrations()?.forwarded(rows);
      this.ports.rearm();
      if (rows.length < BATCH) return;
    }
  }
}

/** The shard a session's runs are registered with: a stable hash of its object name. */
export function shardOf(session: string): string {
  let hash = 0;
  for (let index = 0; index < session.length; index++) hash = (Math.imul(hash, 31) + session.charCodeAt(index)) >>> 0;
  return shardName(hash % DEFERRED_INDEX_SHARDS);
}

export function shardName(index: number): string {
  return `shard:${index}`;
}
