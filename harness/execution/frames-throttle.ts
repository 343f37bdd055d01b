/** Milliseconds, monotonic enough for throttling. Injected so tests never touch real time. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();

export const WIRE_UPDATE_INTERVAL_MS = 50;

/**
 * Wire-side throttle for live `message_update` events (D10: at most ~20 per second per stream). Non-resetting:
 * `shouldEmit()` is true at most once per interval, measured from the last emission. A suppressed update is
 * remembered (`suppressed`) so the caller can send the latest state before `message_end`. The interval may be
 * a function, read at every decision: a host paces a lane's updates by its audience (`LiveUpdatePacing`).
 */
export class UpdateThrottle {
  readonly #intervalMs: () => number;
  readonly #clock: Clock;
  #lastEmitAt: number | undefined;
  #suppressed = false;

  constructor(intervalMs: number | (() => number) = WIRE_UPDATE_INTERVAL_MS, clock: Clock = systemClock) {
    this.#intervalMs = typeof intervalMs === "number" ? () => intervalMs : intervalMs;
    this.#clock = clock;
  }

  shouldEmit(): boolean {
    const now = this.#clock();
    if (this.#lastEmitAt !== undefined && now - this.#lastEmitAt < this.#intervalMs()) {
      this.#suppressed = true;
      return false;
    }
    this.#lastEmitAt = now;
    this.#suppressed = false;
    return true;
  }

  /** True when an update was suppressed since the last emission. */
  get suppressed(): boolean {
    return this.#suppressed;
  }

  /** Forget the last emission (a new stream starts). */
  reset(): void {
    this.#lastEmitAt = undefined;
    this.#suppressed = false;
  }
}
