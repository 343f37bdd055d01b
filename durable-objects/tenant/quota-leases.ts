/** The per-minute request window a lease belongs to (and expires with). */
export const WINDOW_MS = 60_000;
/** The most requests one lease carries. */
export const LEASE_MAX = 50;
/**
 * A lease takes at most this share (1/8) of what remains of the tenant's minute: a small quota is
 * leased one request at a time (exact: 15 or fewer remaining give leases of 1), and idle leases
 * held by many isolates cannot take a large quota from the ones that have traffic (each grant
 * leaves at least 7/8 of the rest to the others).
 */
export const LEASE_SHARE = 8;

/** The start of the minute `now` falls in. */
export const windowStartOf = (now: number): number => now - (now % WINDOW_MS);

/** How many requests a lease asking for `wanted` gets when `remaining` are left in the minute. */
export function leaseSize(remaining: number, wanted: number): number {
  return Math.min(wanted, LEASE_MAX, Math.max(1, Math.floor(remaining / LEASE_SHARE)), remaining);
}

/** Requests already counted against a tenant's minute `windowStart` by its object, not yet spent. */
interface Lease {
  windowStart: number;
  remaining: number;
}

/** At most this many tenants' leases are held (the oldest are dropped first: they were counted, never lost). */
const HOLDERS_MAX = 10_000;

/**
 * The request-quota leases one holder (an isolate of the front worker; later a session object, for
 * work that does not pass the front worker) took from its tenants' objects. The tenant object counts
 * a lease's requests against the minute when it grants it and saves the count in that same turn
 * (request-window.ts), so spending here writes nothing and asks no one: a tenant never gets more than
 * its quota in a minute through leases, and a lease expires with its minute (by this holder's clock:
 * a clock behind the object's can spend a lease's rest in the object's next minute, at most one lease
 * per holder). Dropping a lease only wastes requests that were counted.
 */
export class QuotaLeases {
  private readonly leases = new Map<string, Lease>();

  /** Spends one request of the tenant's lease for the minute of `now`; false when none is left. */
  spend(tenantId: string, now: number): boolean {
    const lease = this.leases.get(tenantId);
    if (!lease) return false;
    if (now >= lease.windowStart + WINDOW_MS) {
      this.leases.delete(tenantId);
      return false;
    }
    if (lease.remaining === 0) return false;
    lease.remaining -= 1;
    return true;
  }

  /**
   * Holds `granted` more requests of the tenant's minute `windowStart`: added to a lease of the same
   * minute, replacing one of an older minute (a late grant of an older minute is not kept).
   */
  hold(tenantId: string, windowStart: number, granted: number): void {
    const lease = this.leases.get(tenantId);
    if (granted <= 0 || (lease && lease.windowStart > windowStart)) return;
    this.leases.delete(tenantId);
    const remaining = lease?.windowStart === windowStart ? lease.remaining + granted : granted;
    this.leases.set(tenantId, { windowStart, remaining });
    if (this.leases.size > HOLDERS_MAX) {
      const oldest = this.leases.keys().next().value;
      if (oldest !== undefined) this.leases.delete(oldest);
    }
  }

  /** Drops the tenant's lease: its quota changed, so what was leased under the old one is not spent. */
  drop(tenantId: string): void {
    this.leases.delete(tenantId);
  }
}
