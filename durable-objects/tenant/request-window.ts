import { leaseSize, WINDOW_MS, windowStartOf } from "./quota-leases.ts";

type Window = { start: number; count: number };

/** A lease of `granted` requests of the minute `windowStart` (0 for a key check that asked for none), or a refusal. */
export type LeaseGrant = { limited: false; granted: number; windowStart: number } | { limited: true; retryAfterSeconds: number };

/**
 * The tenant's per-minute request count (quota `requestsPerMinute`), spent through leases
 * (quota-leases.ts): the front worker's isolates ask for a batch of requests and spend it without
 * asking again. A grant counts the whole lease against the minute and saves the count in the same
 * synchronous turn, before the answer leaves the object (the platform holds a reply until the
 * writes before it are durable): one write per lease, not per request, and a restarted object (a
 * deploy, an eviction, a crash) resumes from a count that includes every lease it ever granted, so
 * no accounting is lost. The count is kept in memory too, so a grant reads no row.
 */
export class RequestWindow {
  private current: Window | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /**
   * Leases up to `wanted` requests of the minute of `now` against `limit` (leaseSize decides how
   * many), or refuses with the seconds left in the minute. `wanted` 0 counts nothing and is never
   * refused: its caller spends a lease it holds.
   */
  grant(now: number, limit: number, wanted: number): LeaseGrant {
    if (wanted <= 0) return { limited: false, granted: 0, windowStart: windowStartOf(now) };
    const window = this.windowAt(windowStartOf(now));
    const remaining = limit - window.count;
    if (remaining <= 0) return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000)) };
    const granted = leaseSize(remaining, wanted);
    window.count += granted;
    this.save(window);
    return { limited: false, granted, windowStart: window.start };
  }

  /**
   * The window a request of the minute `start` counts in. The window never moves back: a request
   * stamped in an earlier minute (a holder's clock a little behind, or a call sent just before the
   * boundary) counts in the current one. Starting the earlier minute afresh would drop the current
   * minute's count, and a tenant at its quota would get it again.
   */
  private windowAt(start: number): Window {
    // A fresh object reads the saved count once.
    this.current ??= this.saved();
    if (this.current !== undefined && this.current.start >= start) return this.current;
    this.current = { start, count: 0 };
    return this.current;
  }

  private saved(): Window | undefined {
    const row = this.sql.exec<{ window_start: number; count: number }>("SELECT window_start, count FROM request_window WHERE singleton = 1").toArray()[0];
    return row && { start: row.window_start, count: row.count };
  }

  private save(window: Window): void {
    this.sql.exec(
      `INSERT INTO request_window (singleton, window_start, count) VALUES (1, ?, ?)
       ON CONFLICT (singleton) DO UPDATE SET window_start = excluded.window_start, count = excluded.count`,
      window.start,
      window.count,
    );
  }
}
