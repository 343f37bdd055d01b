/**
 * How long a held slot is used. The tenant drops an unbound reservation after 90 s
 * (UNBOUND_RESERVATION_MS); a slot older than this is given back rather than risk binding one the
 * tenant no longer counts.
 */
export const SPARE_SLOT_MAX_AGE_MS = 60_000;

type TenantStub = ReturnType<Env["TENANTS"]["getByName"]>;

/**
 * One open-operation slot the session holds ahead of its next socket `prompt` command
 * (socket-commands.ts), so that a conversation on a lane socket does not wait for the tenant
 * object on every turn: the slot is taken from the tenant after a command used the previous one,
 * off that command's path. The tenant grants it only while half its quota is free
 * (tenant-operations.ts `reserveSpare`), so near the quota every command reserves on its own path,
 * as before. Memory only: a slot held by an evicted object expires in the tenant by itself.
 */
export class SpareSlot {
  private held: { reservationId: string; at: number } | undefined;
  private refilling = false;

  /** The held slot when it is fresh (then no longer held); a stale one is given back. */
  take(tenant: TenantStub, now: number): string | undefined {
    const held = this.held;
    this.held = undefined;
    if (!held) return undefined;
    if (now - held.at < SPARE_SLOT_MAX_AGE_MS) return held.reservationId;
    void tenant.releaseOperation(held.reservationId).catch(() => undefined);
    return undefined;
  }

  /** Asks the tenant for the next slot (once at a time; nothing when one is held or refused). */
  refill(tenant: TenantStub, sessionId: string, lane: string): void {
    if (this.held || this.refilling) return;
    this.refilling = true;
    tenant
      .reserveSpareOperation(sessionId, lane)
      .then((granted) => {
        if (granted.ok) this.held = { reservationId: granted.reservationId, at: Date.now() };
      })
      .catch(() => undefined)
      .finally(() => (this.refilling = false));
  }
}
