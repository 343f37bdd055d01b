import type { PendingReservations } from "./pending-reservations.ts";

/** Concurrent open operations a tenant may have when no quota of its own is set. */
export const DEFAULT_MAX_OPEN_OPERATIONS = 50;

/**
 * An unbound reservation (its accept is still in flight) expires after this long. Longer than the
 * 60 s the prompt convenience may wait inside its accept call, so a slow accept keeps its slot.
 */
export const UNBOUND_RESERVATION_MS = 90_000;

/**
 * A slot a session holds ahead (session/held-slots.ts) expires after this long unless bound; the
 * session uses one for at most HELD_SLOT_MAX_AGE_MS (10 s), so an idle session's slot is counted
 * against the quota for at most this long.
 */
export const SPARE_RESERVATION_MS = 15_000;

/** A release that arrived before its bind is remembered this long. */
const RELEASED_TTL_MS = 10 * 60_000;

/**
 * Healing lost releases is bounded and rare: a refusal lists at most this many operations (the
 * oldest, the likeliest to have lost their release) for the caller to check with their sessions,
 * and only when no refusal listed any in the last HEAL_INTERVAL_MS. Other refusals list none, so a
 * tenant at its quota costs one call to this object per attempt, not a fan-out to its sessions.
 */
export const LISTED_OPEN_OPERATIONS = 10;
export const HEAL_INTERVAL_MS = 30_000;

export interface OpenOperation {
  sessionId: string;
  lane: string;
  operationId: string;
}

/**
 * A granted reservation says whether the tenant has webhook endpoints (`webhooks`): a session
 * settling an operation it took the reservation of over keeps no outbox row for it when nothing
 * but the reservation (which expires by itself) and usage (told by its own mark) needs the
 * forward (session/due-work/settlement-outbox.ts).
 */
export type Reservation = { ok: true; reservationId: string; webhooks: boolean } | { ok: false; openOperations: OpenOperation[] };

type OpenRow = { operation_id: string; session_id: string; lane: string };

/**
 * The TenantObject's open-operations ledger (ARCHITECTURE D2 quotas) and usage totals. Every
 * method is one synchronous SQL turn: no await between a read and the write that depends on it
 * (D5), so two concurrent reservations cannot both take the last slot.
 *
 * A reservation is held in memory (PendingReservations) until the worker binds it to the accepted
 * operation's id, which writes its row; the session object releases by operation id when the
 * operation settles, or frees the reservation it took over. Either order of bind
 * and release works (a release that finds no row leaves a short-lived tombstone the bind honours).
 * Lost releases (a crash, a dropped fire-and-forget call) are healed by the worker, which asks the
 * listed sessions whether their operations are still current when a reservation is refused (at
 * most LISTED_OPEN_OPERATIONS sessions, at most once per HEAL_INTERVAL_MS).
 */
export class TenantOperations {
  constructor(
    private readonly sql: SqlStorage,
    /** Reservations of accepts in flight, held in the object's memory (pending-reservations.ts). */
    private readonly pending: PendingReservations,
  ) {}

  /** Writes nothing when it grants a slot: the reservation stays in memory until it is bound. */
  reserve(sessionId: string, lane: string, max: number, now: number, webhooks: boolean): Reservation {
    this.expire(now);
    // Slots sessions hold ahead give way to an operation that needs one now. A session that then
    // uses the slot it was holding runs that operation uncounted: the quota may be exceeded by the
    // slots given way within their last seconds (SPARE_RESERVATION_MS), never refused by idle ones.
    while (this.count() >= max && this.pending.evictSpare());
    if (this.count() >= max) {
      if (!this.healDue(now)) return { ok: false, openOperations: [] };
      const rows = this.sql
        .exec<OpenRow>("SELECT operation_id, session_id, lane FROM open_operations WHERE bound = 1 ORDER BY reserved_at LIMIT ?", LISTED_OPEN_OPERATIONS)
        .toArray();
      return { ok: false, openOperations: rows.map((row) => ({ sessionId: row.session_id, lane: row.lane, operationId: row.operation_id })) };
    }
    const reservationId = `rsv_${crypto.randomUUID()}`;
    this.pending.add(reservationId, { sessionId, lane, reservedAt: now });
    return { ok: true, reservationId, webhooks };
  }

  /**
   * A slot a session holds ahead of its lane's next prompt (session/held-slots.ts), granted only
   * while at least half the quota is free, so that a tenant near its quota never has slots held
   * idle; refused otherwise (the prompt then reserves on its own path, as before). It is an unbound
   * reservation like any other: it expires after UNBOUND_RESERVATION_MS unless bound.
   */
  reserveSpare(sessionId: string, lane: string, max: number, now: number, webhooks: boolean): Reservation {
    this.expire(now);
    if (this.count() + 1 > Math.floor(max / 2)) return { ok: false, openOperations: [] };
    const reservationId = `rsv_${crypto.randomUUID()}`;
    this.pending.add(reservationId, { sessionId, lane, reservedAt: now, spare: true });
    return { ok: true, reservationId, webhooks };
  }

  private expire(now: number): void {
    this.pending.expire(now - UNBOUND_RESERVATION_MS, now - SPARE_RESERVATION_MS);
  }

  /** Open operations: slots taken, less the slots sessions merely hold ahead. */
  openCount(): number {
    return this.count() - this.pending.spareCount;
  }

  /** Slots taken: bound operations (rows) and accepts in flight (memory), held slots included. */
  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM open_operations").one().n + this.pending.size;
  }

  /**
   * The sessions the ledger holds an open operation of (bound rows, and reservations in memory: an
   * accept in flight, or an operation that took its reservation over). Bounded by the quota
   * (maxOpenOperations), whatever the number of sessions. A settled operation leaves it when the
   * session's settlement forward arrives (a moment after the commit; after a crash, when the
   * session's alarm repeats it); a release that was lost stays until a refused reservation heals it.
   */
  sessionsWithOpenOperations(): Set<string> {
    const rows = this.sql.exec<{ session_id: string }>("SELECT DISTINCT session_id FROM open_operations").toArray();
    return new Set([...rows.map((row) => row.session_id), ...this.pending.sessionIds()]);
  }

  /**
   * Re-keys a reservation by its session and operation id (an operation id is only new within its
   * session); an operation already released frees the slot instead. A reservation this object no
   * longer knows (forgotten by a restart, or expired) is bound by the `owner` the caller names: the
   * operation is open whatever happened to its reservation, and outlives the moment (a slot held
   * ahead is used for seconds after its grant), so it is counted from now until its release.
   */
  bind(reservationId: string, operationId: string, now: number, owner?: { sessionId: string; lane: string }): void {
    this.pruneReleased(now);
    const pending = this.pending.take(reservationId) ?? (owner && { ...owner, reservedAt: now });
    if (!pending) return;
    const released = this.sql
      .exec("DELETE FROM released_operations WHERE session_id = ? AND operation_id = ? RETURNING operation_id", pending.sessionId, operationId)
      .toArray().length;
    if (released > 0) return;
    this.sql.exec(
      "INSERT INTO open_operations (session_id, operation_id, lane, reserved_at, bound) VALUES (?, ?, ?, ?, 1) ON CONFLICT (session_id, operation_id) DO NOTHING",
      pending.sessionId,
      operationId,
      pending.lane,
      pending.reservedAt,
    );
  }

  /** Frees a reservation not bound yet; idempotent. */
  releaseReservation(reservationId: string): void {
    this.pending.take(reservationId);
  }

  /** Frees the slot of a session's operation; idempotent. A release before its bind leaves a tombstone the bind honours. */
  release(sessionId: string, operationId: string, now: number): void {
    this.pruneReleased(now);
    const removed = this.sql.exec("DELETE FROM open_operations WHERE session_id = ? AND operation_id = ? RETURNING operation_id", sessionId, operationId).toArray().length;
    if (removed === 0) {
      this.sql.exec(
        "INSERT INTO released_operations (session_id, operation_id, released_at) VALUES (?, ?, ?) ON CONFLICT (session_id, operation_id) DO NOTHING",
        sessionId,
        operationId,
        now,
      );
    }
  }

  /**
   * A settled operation's slot: held by its reservation when the session took the reservation over
   * and nobody bound it (freed without a tombstone, since no bind can follow a settled hand-over),
   * otherwise by its operation id (`release`).
   */
  releaseSettled(sessionId: string, operationId: string, reservationId: string | undefined, now: number): void {
    // A pending reservation is freed by `forgetPending` once the caller's transaction committed.
    if (reservationId !== undefined && this.pending.has(reservationId)) return;
    this.release(sessionId, operationId, now);
  }

  /** After the transaction that released them committed: their pending reservations are freed. */
  forgetPending(reservationIds: readonly (string | undefined)[]): void {
    for (const id of reservationIds) if (id !== undefined) this.pending.take(id);
  }

  /** Whether a refusal may list operations for healing now; if so, the time is recorded. */
  private healDue(now: number): boolean {
    const last = this.sql.exec<{ last_heal_at: number }>("SELECT last_heal_at FROM operation_heal WHERE singleton = 1").toArray()[0]?.last_heal_at;
    if (last !== undefined && now - last < HEAL_INTERVAL_MS) return false;
    this.sql.exec(
      "INSERT INTO operation_heal (singleton, last_heal_at) VALUES (1, ?) ON CONFLICT (singleton) DO UPDATE SET last_heal_at = excluded.last_heal_at",
      now,
    );
    return true;
  }

  private pruneReleased(now: number): void {
    this.sql.exec("DELETE FROM released_operations WHERE released_at < ?", now - RELEASED_TTL_MS);
  }
}
