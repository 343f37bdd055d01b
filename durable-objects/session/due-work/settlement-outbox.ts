import { SerialRerun } from "./serial-rerun.ts";
import { idText, storedId } from "../storage/stored-ids.ts";
import type { OperationResultRecord } from "../../../schema/lane.ts";
import type { ForwardedUsage, PendingUsage } from "./usage-outbox.ts";

/**
 * A row is forwarded right after its commit by a live forward; the alarm only backs up a forward
 * that died with the object, so it is armed a little later instead of firing beside it.
 */
export const FORWARD_SAFETY_NET_MS = 5_000;
/**
 * A settlement forward no lane waits on (for its next held slot) goes out this long after the
 * commit that made it due, carrying every settlement and usage row committed meanwhile: a lane
 * prompted back to back costs its tenant one call per this much time, not one per turn.
 */
export const FORWARD_COALESCE_MS = 100;
/** A forward that failed (the tenant object unreachable) is retried by the alarm after this long. */
export const FORWARD_RETRY_MS = 30_000;
/** Rows told to the tenant in one call; a longer outbox takes several calls of one forward. */
export const FORWARD_BATCH = 50;
/**
 * A settlement not acknowledged this long after it settled is given up: dropped and logged
 * (`settlement_forward_expired`). Bounding the age of a repeated forward is what lets the tenant
 * forget the event ids it enqueued (tenant/webhooks/webhook-event-ids.ts keeps them longer than this).
 */
export const OUTBOX_MAX_AGE_MS = 7 * 24 * 3_600_000;

type StoredOutboxRow = { operation_id: string; lane: string; settled_at: number; reservation_id: string | null };
/** `slot_kept` (memory only, never stored): the operation's slot stayed with its session (`reclaim`). */
type OutboxRow = StoredOutboxRow & { slot_kept?: true };

/**
 * The worker's reservation of an accepted operation's open-operation slot, handed to the session
 * with the accept, and whether the tenant has webhook endpoints (tenant-operations.ts).
 */
export interface HandedReservation {
  reservationId: string;
  webhooks: boolean;
}

/** A handed-over reservation until its operation settles; `bound` once the worker bound the slot. */
interface HeldReservation extends HandedReservation {
  bound: boolean;
}

/** What the session tells its tenant about one settled operation (a summary, never content). */
export interface SettledOperation {
  operationId: string;
  lane: string;
  settledAt: number;
  /** The worker's reservation of the operation's slot, when the session took it over (freed with it). */
  reservationId?: string;
  /**
   * The operation's slot stayed with the session, held for its lane's next prompt (held-slots.ts):
   * the tenant frees nothing for it, and keeps no tombstone of its release.
   */
  slotKept?: true;
  /** The result record's summary; absent when the operation left no record (its lane is gone). */
  result?: { kind: string; status: string; error?: { code: string; message: string }; endedAt: number };
}

/**
 * The session's settlement outbox: a settled operation's row is inserted inside the mutation that
 * settles it (the same atomic batch: DueWork.settled runs synchronously in the commit), and deleted
 * after the tenant object acknowledged it, with the session's next commit. So a crash between the
 * commit and the tenant's update loses nothing: the row and the alarm armed for it survive, and the
 * next forward repeats the call, which the tenant object applies idempotently. Every method is one
 * synchronous SQL turn.
 */
export class SettlementOutbox {
  /** Reservations handed over with accepts of this instance, until their operation settles. */
  private readonly handedOver = new Map<string, HeldReservation>();
  /**
   * Settled operations told to the tenant from memory, with no row (`record`): until acknowledged,
   * or stored as rows when a forward of them fails.
   */
  private readonly unstored = new Map<string, OutboxRow>();
  /** Unstored settlements a forward read (and may be telling the tenant now), until acknowledged. */
  private readonly told = new Set<string>();
  /**
   * Rows the tenant acknowledged that are still stored. Deleting a row on its own right after the
   * acknowledgment is one more commit (and flush) per turn, on the way of the next request; so it
   * is deleted inside the session's next commit (`dropAcknowledged`, called by DueWork) or by the
   * alarm its row armed. If the object dies first, the row is forwarded again, which the tenant
   * applies once (keyed by operation and event id).
   */
  private readonly acknowledged = new Set<string>();

  constructor(
    private readonly sql: SqlStorage,
    private readonly clock: () => number,
  ) {}

  /**
   * The worker reserved the tenant's open-operation slot of `operationId` as `reservationId` and
   * leaves its release to this outbox: the settlement's row carries it, and the forward frees both
   * ids in the tenant call it makes anyway, so a turn settled within its request costs no bind
   * call. Held in memory until the settling commit writes it into the row; an operation that does
   * not settle in this instance was not answered as settled, so the worker bound it itself.
   */
  takeOver(operationId: string, reservation: HandedReservation): void {
    this.handedOver.set(operationId, { ...reservation, bound: false });
  }

  /**
   * The accept's answer did not carry the settled operation, so the worker binds the slot to the
   * operation: its release must survive a crash (a bound slot does not expire), so the settlement
   * keeps a row, also when it was already told from memory.
   */
  bound(operationId: string): void {
    const held = this.handedOver.get(operationId);
    if (held) held.bound = true;
    const unstored = this.unstored.get(operationId);
    if (unstored) this.store(unstored, this.clock() + FORWARD_SAFETY_NET_MS);
  }

  /**
   * Writes the settled operation's row; answers when the alarm must forward it at the latest.
   *
   * No row for an operation whose unbound reservation this instance holds, in a tenant without
   * webhook endpoints: nothing its forward carries then needs one. The reservation expires at the
   * tenant by itself (tenant-operations.ts UNBOUND_RESERVATION_MS) and usage is told by its own
   * mark (usage-outbox.ts). The row was inserted and deleted again within the turn, two rows
   * written of a simple turn's bill (QUALITY P12). The forward tells it from memory; a forward
   * that fails stores it (`postpone`), and a crash before the forward loses only what expires.
   */
  record(lane: string, operationId: string): number | undefined {
    const now = this.clock();
    const held = this.handedOver.get(operationId);
    this.handedOver.delete(operationId);
    const row: OutboxRow = { operation_id: operationId, lane, settled_at: now, reservation_id: held?.reservationId ?? null };
    if (held && !held.webhooks && !held.bound) {
      this.unstored.set(operationId, row);
      return undefined;
    }
    return this.store(row, now + FORWARD_SAFETY_NET_MS);
  }

  private store(row: OutboxRow, forwardAt: number): number {
    this.unstored.delete(row.operation_id);
    this.sql.exec(
      "INSERT INTO settlement_outbox (operation_id, lane, settled_at, forward_at, reservation_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT (operation_id) DO NOTHING",
      storedId(row.operation_id),
      row.lane,
      row.settled_at,
      forwardAt,
      row.reservation_id,
    );
    return forwardAt;
  }

  /**
   * The settled operation's slot stays with the session (held-slots.ts: the lane's next prompt
   * uses it), so its forward must not free it at the tenant: true when its reservation was taken
   * off the settlement. Only for a settlement held in memory that no forward has read yet; a
   * stored row (webhooks, a bound slot) keeps its reservation, as the durable release needs it.
   */
  reclaim(operationId: string): boolean {
    const row = this.unstored.get(operationId);
    if (!row || row.reservation_id === null || this.told.has(operationId)) return false;
    row.reservation_id = null;
    row.slot_kept = true;
    return true;
  }

  /**
   * When the alarm must look at the outbox next, if it holds a row not yet acknowledged. An
   * acknowledged row wants no alarm of its own: the commit or alarm that comes next deletes it.
   */
  earliest(): number | undefined {
    return this.sql
      .exec<{ operation_id: string; forward_at: number }>(
        `SELECT ${idText("operation_id")} AS operation_id, forward_at FROM settlement_outbox ORDER BY forward_at LIMIT ?`,
        this.acknowledged.size + 1,
      )
      .toArray()
      .find((row) => !this.acknowledged.has(row.operation_id))?.forward_at;
  }

  /** The oldest settlements not yet acknowledged (stored rows, read fully, then the unstored ones). */
  pending(limit: number): OutboxRow[] {
    const stored = this.storedPending(limit);
    const unstored = [...this.unstored.values()].slice(0, limit - stored.length);
    for (const row of unstored) this.told.add(row.operation_id);
    return [...stored, ...unstored];
  }

  private storedPending(limit: number): OutboxRow[] {
    return this.sql
      .exec<StoredOutboxRow>(
        `SELECT ${idText("operation_id")} AS operation_id, lane, settled_at, reservation_id FROM settlement_outbox ORDER BY settled_at, operation_id LIMIT ?`,
        limit + this.acknowledged.size,
      )
      .toArray()
      .filter((row) => !this.acknowledged.has(row.operation_id))
      .slice(0, limit);
  }

  /**
   * The tenant applied these rows. They are deleted with the next commit; past a batch's worth
   * they are deleted now, so the set stays bounded whatever the session does next.
   */
  acknowledge(operationIds: readonly string[]): void {
    for (const id of operationIds) {
      this.told.delete(id);
      if (!this.unstored.delete(id)) this.acknowledged.add(id);
    }
    if (this.acknowledged.size >= FORWARD_BATCH) this.dropAcknowledged();
  }

  /** Deletes the acknowledged rows; synchronous, so inside a mutation it joins that mutation's commit. */
  dropAcknowledged(): void {
    if (this.acknowledged.size === 0) return;
    this.remove([...this.acknowledged]);
    this.acknowledged.clear();
  }

  /** The session is being deleted: what this instance holds in memory belonged to it. */
  forget(): void {
    this.handedOver.clear();
    this.unstored.clear();
    this.told.clear();
  }

  remove(operationIds: readonly string[]): void {
    for (const id of operationIds) this.sql.exec("DELETE FROM settlement_outbox WHERE operation_id = ?", storedId(id));
  }

  /** Deletes and answers the rows past OUTBOX_MAX_AGE_MS that the tenant never acknowledged. */
  dropExpired(): OutboxRow[] {
    const expired = this.sql
      .exec<StoredOutboxRow>(
        `DELETE FROM settlement_outbox WHERE settled_at < ? RETURNING ${idText("operation_id")} AS operation_id, lane, settled_at, reservation_id`,
        this.clock() - OUTBOX_MAX_AGE_MS,
      )
      .toArray();
    return expired.filter((row) => !this.acknowledged.delete(row.operation_id));
  }

  /** A forward of these failed: retried by the alarm at `delayMs` from now, as rows (unstored ones are stored now). */
  postpone(operationIds: readonly string[], delayMs: number): void {
    const at = this.clock() + delayMs;
    for (const id of operationIds) {
      this.told.delete(id);
      const unstored = this.unstored.get(id);
      if (unstored) this.store(unstored, at);
      else this.sql.exec("UPDATE settlement_outbox SET forward_at = ? WHERE operation_id = ?", at, storedId(id));
    }
  }
}

export interface ForwarderPorts {
  /** The outbox, or undefined when the object holds no session (deleted meanwhile). */
  outbox(): SettlementOutbox | undefined;
  /** The settled operation's immutable result record, read synchronously from storage. */
  result(operationId: string): OperationResultRecord | undefined;
  /** The session's usage outbox (usage-outbox.ts), over its ledger; empty when the object holds no session. */
  usage: UsagePorts;
  /** Tells the tenant object; resolves once it applied the batch (idempotently). */
  send(operations: SettledOperation[], usage: ForwardedUsage): Promise<void>;
  /** Points the object's one alarm at whatever is scheduled now (after rows were postponed). */
  rearm(): void;
}

export interface UsagePorts {
  pending(limit: number): PendingUsage | undefined;
  acknowledge(usage: ForwardedUsage): void;
  postpone(delayMs: number): void;
}

/**
 * Moves outbox rows, and the usage-ledger rows the tenant has not acknowledged, to the tenant
 * object, never inside a mutation line: started after the commit (a timer after the settling
 * mutation, or after a commit that wrote usage) and by every alarm. One forward runs at a time; a
 * kick while one runs makes it go round once more. Two forwards of the same row (a forward
 * repeated after a crash) are harmless: the tenant object keys everything by operation and event
 * id, and usage by the session's ledger seq.
 */
export class SettlementForwarder {
  private readonly serial = new SerialRerun(() => this.forwardAll());

  constructor(private readonly ports: ForwarderPorts) {}

  /** Starts a forward, or joins the running one (which then looks at the outbox once more). */
  kick(): Promise<void> {
    return this.serial.kick();
  }

  private async forwardAll(): Promise<void> {
    for (;;) {
      const outbox = this.ports.outbox();
      const usage = this.ports.usage.pending(FORWARD_BATCH);
      if (!outbox || !usage) return;
      for (const row of outbox.dropExpired()) {
        console.warn(JSON.stringify({ event: "settlement_forward_expired", operationId: row.operation_id, lane: row.lane, settledAt: new Date(row.settled_at).toISOString() }));
      }
      const rows = outbox.pending(FORWARD_BATCH);
      if (rows.length === 0 && usage.rows.length === 0) {
        // Nothing left to tell: a retry armed by an earlier failure is disarmed with the next commit.
        if (usage.retrying) this.ports.usage.acknowledge(usage);
        return;
      }
      const operations = rows.map((row) => this.settledOperation(row));
      const ids = rows.map((row) => row.operation_id);
      try {
        await this.ports.send(operations, { epoch: usage.epoch, rows: usage.rows });
      } catch (error) {
        // The rows stay; the alarm retries them later, not in a hot loop.
        this.ports.outbox()?.postpone(ids, FORWARD_RETRY_MS);
        if (usage.rows.length > 0) this.ports.usage.postpone(FORWARD_RETRY_MS);
        this.ports.rearm();
        throw error;
      }
      // After the await the session may have been deleted: its storage is then gone, rows included.
      // The alarm armed for the rows stays: it fires no later than they were due, and deletes them
      // if no commit did first (DueWork only ever moves the alarm earlier).
      const after = this.ports.outbox();
      if (!after) return;
      after.acknowledge(ids);
      this.ports.usage.acknowledge(usage);
      if (rows.length < FORWARD_BATCH && usage.rows.length < FORWARD_BATCH) return;
    }
  }

  private settledOperation(row: OutboxRow): SettledOperation {
    const record = this.ports.result(row.operation_id);
    return {
      operationId: row.operation_id,
      lane: row.lane,
      settledAt: row.settled_at,
      ...(row.reservation_id !== null && { reservationId: row.reservation_id }),
      ...(row.slot_kept && { slotKept: true }),
      ...(record && {
        result: {
          kind: record.kind,
          status: record.status,
          ...(record.error && { error: { code: record.error.code, message: record.error.message } }),
          endedAt: record.endedAt,
        },
      }),
    };
  }
}
