import type { HandedReservation } from "./due-work/settlement-outbox.ts";

/**
 * How long a held slot is used after the tenant granted it. The tenant drops a held slot that was
 * not bound after SPARE_RESERVATION_MS (tenant-operations.ts); a slot older than this is given
 * back rather than risk using one the tenant no longer counts.
 */
export const HELD_SLOT_MAX_AGE_MS = 10_000;

type TenantStub = ReturnType<Env["TENANTS"]["getByName"]>;

/** A slot the tenant granted for a lane with a settlement forward (tenant/operations-and-usage.ts). */
export interface GrantedSlot extends HandedReservation {
  lane: string;
}

/** A held slot taken by a prompt, with when the tenant granted it (its age bounds its reuse). */
export interface TakenSlot {
  slot: HandedReservation;
  grantedAt: number;
}

interface Held {
  slot: HandedReservation;
  at: number;
}

/**
 * Open-operation slots the session holds ahead, one per lane, so that the next prompt on that lane
 * (a `POST …/prompt` the front worker sends here first, or a socket `prompt` command) makes no
 * tenant-object call on its path. A prompt that settles within its request, unbound, gives its slot
 * back to the lane for the next one (the tenant never heard of it being used), until the slot's
 * age runs out; a lane whose slot was bound, or is too old, asks for the next one with the
 * settlement forward the session makes anyway (session-forwards.ts), so holding slots costs no
 * call of its own. The tenant grants one only while half its quota is
 * free (tenant-operations.ts `reserveSpare`), so near the quota every prompt reserves on its own
 * path. A slot carries whether the tenant had webhook endpoints when it was granted (the
 * settlement then keeps a durable row). Memory only: a slot held by an evicted object expires in
 * the tenant by itself, and a held slot is not an open operation in the tenant's session search
 * until an operation is bound to it.
 */
export class HeldSlots {
  private readonly byLane = new Map<string, Held>();
  /** Lanes that want a slot with the next forward; `asked` while a forward carries the request. */
  private readonly wanting = new Set<string>();
  private readonly asked = new Set<string>();

  constructor(
    private readonly tenant: () => TenantStub,
    /** This session's id, named with a bind (the tenant counts the operation by it). */
    private readonly sessionId: () => string,
  ) {}

  /** The reservation of the slot the lane holds now (the next prompt can take it), if any. */
  heldFor(lane: string): string | undefined {
    return this.byLane.get(lane)?.slot.reservationId;
  }

  /** The lane's held slot when it is fresh (then no longer held); a stale one is given back. */
  take(lane: string, now: number): TakenSlot | undefined {
    const held = this.byLane.get(lane);
    this.byLane.delete(lane);
    if (!held) return undefined;
    if (now - held.at < HELD_SLOT_MAX_AGE_MS) return { slot: held.slot, grantedAt: held.at };
    this.release(held.slot.reservationId);
    return undefined;
  }

  /**
   * A slot taken but not used (its accept was refused), or used by an operation that settled
   * unbound and whose release the tenant was not told: held again, with the age it had, or given
   * back when the lane holds another.
   */
  putBack(lane: string, { slot, grantedAt }: TakenSlot): void {
    if (this.byLane.has(lane)) this.release(slot.reservationId);
    else this.byLane.set(lane, { slot, at: grantedAt });
  }

  /**
   * The slot now belongs to `operationId` of `lane`, which outlives the moment: the tenant counts it
   * as open (also when a restart of the tenant object forgot the slot since it was granted).
   */
  bind(slot: HandedReservation, operationId: string, lane: string): void {
    this.tell((tenant) => tenant.bindOperation(slot.reservationId, operationId, { sessionId: this.sessionId(), lane }));
  }

  /** A slot taken for nothing: freed at the tenant. */
  release(reservationId: string): void {
    this.tell((tenant) => tenant.releaseReservation(reservationId));
  }

  /** Off the caller's path, and never failing it: a slot the tenant does not hear of expires there. */
  private tell(call: (tenant: TenantStub) => Promise<unknown>): void {
    try {
      void call(this.tenant()).catch(() => undefined);
    } catch {
      // The session is gone (its tenant unknown here): its slots expire at the tenant by themselves.
    }
  }

  /** Whether a lane waits for a slot the next forward would ask for (that forward is not coalesced). */
  wanted(): boolean {
    for (const lane of this.wanting) if (!this.byLane.has(lane) && !this.asked.has(lane)) return true;
    return false;
  }

  /** The lane wants its next slot: asked for with the session's next settlement forward. */
  want(lane: string): void {
    if (!this.byLane.has(lane)) this.wanting.add(lane);
  }

  /** The lanes a forward about to be sent asks slots for (then asked, until `granted` or `notGranted`). */
  toAsk(): string[] {
    const lanes = [...this.wanting].filter((lane) => !this.byLane.has(lane) && !this.asked.has(lane));
    this.wanting.clear();
    for (const lane of lanes) this.asked.add(lane);
    return lanes;
  }

  /** The forward's answer: the slots granted (a lane that holds one meanwhile gives the new one back). */
  granted(asked: readonly string[], slots: readonly GrantedSlot[], now: number): void {
    for (const lane of asked) this.asked.delete(lane);
    for (const { lane, reservationId, webhooks } of slots) {
      if (this.byLane.has(lane)) this.release(reservationId);
      else this.byLane.set(lane, { slot: { reservationId, webhooks }, at: now });
    }
  }

  /** The forward failed: its lanes want a slot again with the next one. */
  notGranted(asked: readonly string[]): void {
    for (const lane of asked) {
      this.asked.delete(lane);
      this.wanting.add(lane);
    }
  }
}
