/** A slot reserved for an accept in flight: in memory until the accept's operation outlives its request. */
export interface PendingReservation {
  sessionId: string;
  lane: string;
  reservedAt: number;
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

  add(reservationId: string, reservation: PendingReservation): void {
    this.byId.set(reservationId, reservation);
  }

  has(reservationId: string): boolean {
    return this.byId.has(reservationId);
  }

  /** The sessions with an accept in flight (or an operation holding its reservation until it settles). */
  sessionIds(): string[] {
    return [...this.byId.values()].map((reservation) => reservation.sessionId);
  }

  /** Removes and answers the reservation, if it is pending. */
  take(reservationId: string): PendingReservation | undefined {
    const reservation = this.byId.get(reservationId);
    this.byId.delete(reservationId);
    return reservation;
  }

  /** Drops reservations reserved before `cutoff` (their accept never reported back). */
  expire(cutoff: number): void {
    for (const [id, reservation] of this.byId) if (reservation.reservedAt < cutoff) this.byId.delete(id);
  }
}
