/** A slot reserved for an accept in flight: in memory until the accept's operation outlives its request. */
export interface PendingReservation {
  sessionId: string;
  lane: string;
  reservedAt: number;
  /**
   * Held ahead by the session for its lane's next prompt (session/held-slots.ts): counted against
   * the quota, but no operation is open on it until one is bound to it.
   */
  spare?: true;
}

/**
 * The open-operation slots of accepts still in flight, held in the tenant object's memory. A
 * reservation is taken before every accept (every prompt) and, for a turn that settles within its
 * request, freed again a few milliseconds later by the session's settlement forward: written, it
 * would put a storage flush in front of the prompt's answer (the platform holds a reply until the
 * writes before it are durable) and write and delete a row per turn, though no recovery needs it.
 * A reservation is written when it is bound to its operation (the operation outlived its request);
 * one freed before that is never written. A restart of the tenant object forgets the reservations
 * of accepts in flight at that moment, so the quota may admit that many more until they settle.
 */
export class PendingReservations {
  private readonly byId = new Map<string, PendingReservation>();

  get size(): number {
    return this.byId.size;
  }

  /** Slots held ahead by sessions, none used by an operation the tenant knows of. */
  get spareCount(): number {
    let count = 0;
    for (const reservation of this.byId.values()) if (reservation.spare) count++;
    return count;
  }

  add(reservationId: string, reservation: PendingReservation): void {
    this.byId.set(reservationId, reservation);
  }

  has(reservationId: string): boolean {
    return this.byId.has(reservationId);
  }

  /**
   * The sessions with an accept in flight (or an operation holding its reservation until it
   * settles); a slot a session merely holds ahead does not count.
   */
  sessionIds(): string[] {
    return [...this.byId.values()].filter((reservation) => !reservation.spare).map((reservation) => reservation.sessionId);
  }

  /** Removes and answers the reservation, if it is pending. */
  take(reservationId: string): PendingReservation | undefined {
    const reservation = this.byId.get(reservationId);
    this.byId.delete(reservationId);
    return reservation;
  }

  /**
   * Drops reservations reserved before `cutoff` (their accept never reported back), and slots held
   * ahead reserved before `spareCutoff` (their session did not use them in time).
   */
  expire(cutoff: number, spareCutoff: number): void {
    for (const [id, reservation] of this.byId) if (reservation.reservedAt < (reservation.spare ? spareCutoff : cutoff)) this.byId.delete(id);
  }

  /** Drops the oldest slot held ahead, if any (the quota is needed for an operation now). */
  evictSpare(): boolean {
    for (const [id, reservation] of this.byId) {
      if (!reservation.spare) continue;
      this.byId.delete(id);
      return true;
    }
    return false;
  }
}
