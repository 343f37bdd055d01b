/** The count is saved each time it grows by this fraction of the quota (and when the quota is reached). */
const SAVE_EVERY_FRACTION = 10;
const WINDOW_MS = 60_000;

type Window = { start: number; count: number; saved: number };

export type RequestVerdict = { limited: false } | { limited: true; retryAfterSeconds: number };

/**
 * The tenant's per-minute request count (quota `requestsPerMinute`). Every authenticated request
 * passes here, so a write per request would put a storage flush in front of every answer (the
 * platform holds a reply until the writes before it are durable: ~1.2 ms a request under
 * `wrangler dev`, more when storage is replicated). The count lives in memory, exact while the
 * object lives, and is saved each time it grows by a tenth of the quota and when it reaches the
 * quota: a restarted object (a deploy, an eviction) resumes from the saved count, so at most a
 * tenth of the quota more gets through in that minute. A tenant at its quota stays refused.
 */
export class RequestWindow {
  private current: Window | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** Counts one request at `now` against `limit`, or refuses it with the seconds left in the minute. */
  admit(now: number, limit: number): RequestVerdict {
    const start = now - (now % WINDOW_MS);
    const window = this.windowStarting(start);
    if (window.count >= limit) return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)) };
    window.count += 1;
    const step = Math.max(1, Math.ceil(limit / SAVE_EVERY_FRACTION));
    if (window.count >= limit || window.count - window.saved >= step) this.save(window);
    return { limited: false };
  }

  private windowStarting(start: number): Window {
    if (this.current?.start === start) return this.current;
    // A fresh object reads the saved count once; a row of an earlier minute counts for nothing.
    const saved = this.current ? undefined : this.sql.exec<{ window_start: number; count: number }>("SELECT window_start, count FROM request_window WHERE singleton = 1").toArray()[0];
    const count = saved?.window_start === start ? saved.count : 0;
    this.current = { start, count, saved: count };
    return this.current;
  }

  private save(window: Window): void {
    this.sql.exec(
      `INSERT INTO request_window (singleton, window_start, count) VALUES (1, ?, ?)
       ON CONFLICT (singleton) DO UPDATE SET window_start = excluded.window_start, count = excluded.count`,
      window.start,
      window.count,
    );
    window.saved = window.count;
  }
}
