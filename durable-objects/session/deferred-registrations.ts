import type { DeferredRegistration } from "../deferred-index.ts";
import { SerialRerun } from "./serial-rerun.ts";
import { FORWARD_RETRY_MS, FORWARD_SAFETY_NET_MS } from "./settlement-outbox.ts";

/** Shards of the DeferredIndex; a session's runs all go to the shard its name hashes to. */
export const DEFERRED_INDEX_SHARDS = 8;
const BATCH = 50;

type Row = { operation_id: string; lane: string; poll_at: number };

/**
 * Suspended runs waiting to be registered with the session's DeferredIndex shard (ARCHITECTURE
 * D8): the row is inserted inside the commit that suspends the run (DueWork.suspended runs in that
 * batch), forwarded after it, and deleted once the shard has it; a crash in between loses nothing
 * (the row and the alarm armed for it survive, and registering twice is harmless). Every method is
 * one synchronous SQL turn.
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
      `INSERT INTO deferred_registrations (operation_id, lane, poll_at, forward_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (operation_id) DO UPDATE SET lane = excluded.lane, poll_at = excluded.poll_at, forward_at = excluded.forward_at`,
      operationId,
      lane,
      pollAt,
      forwardAt,
    );
    return forwardAt;
  }

  earliest(): number | undefined {
    return this.sql.exec<{ due: number | null }>("SELECT MIN(forward_at) AS due FROM deferred_registrations").one().due ?? undefined;
  }

  pending(limit: number): Row[] {
    return this.sql.exec<Row>("SELECT operation_id, lane, poll_at FROM deferred_registrations ORDER BY poll_at, operation_id LIMIT ?", limit).toArray();
  }

  /** Deletes what was forwarded, unless the run suspended again meanwhile (a newer poll time). */
  remove(rows: readonly Row[]): void {
    for (const row of rows) this.sql.exec("DELETE FROM deferred_registrations WHERE operation_id = ? AND poll_at = ?", row.operation_id, row.poll_at);
  }

  postpone(rows: readonly Row[], delayMs: number): void {
    const at = this.clock() + delayMs;
    for (const row of rows) this.sql.exec("UPDATE deferred_registrations SET forward_at = ? WHERE operation_id = ?", at, row.operation_id);
  }
}

export interface RegistrarPorts {
  /** The registrations, or undefined when the object holds no session (deleted meanwhile). */
  registrations(): DeferredRegistrations | undefined;
  /** The session object's name, which the sweep uses to reach it again. */
  sessionName(): string | undefined;
  /** Registers with the shard; resolves once the shard has them. */
  send(shard: string, runs: DeferredRegistration[]): Promise<void>;
  rearm(): void;
}

/** Forwards registrations to the shard after their commit and on every alarm; one forward at a time. */
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
      const runs = rows.map((row): DeferredRegistration => ({ session, lane: row.lane, operationId: row.operation_id, dueAt: row.poll_at }));
      try {
        await this.ports.send(shardOf(session), runs);
      } catch (error) {
        this.ports.registrations()?.postpone(rows, FORWARD_RETRY_MS);
        this.ports.rearm();
        throw error;
      }
      this.ports.registrations()?.remove(rows);
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
