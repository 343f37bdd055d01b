// When a webhook delivery is tried again, when it is given up, and when an endpoint that keeps
// failing is disabled (docs/webhooks.md "Retries" and "Disabled endpoints"). The limits exist so
// that no tenant can keep a third party under a stream of signed POSTs: retries back off to one an
// hour and stop after a day, and an endpoint that fails for days, or hundreds of times in a row,
// is sent nothing more until its tenant re-enables it.

/** The wait after a delivery's first failed attempt; every further failure doubles it… */
export const FIRST_RETRY_DELAY_MS = 30_000;
/** …up to this wait between two attempts. */
export const MAX_RETRY_DELAY_MS = 3_600_000;
/** No attempt is made later than this after a delivery's first attempt: then it has failed. */
export const RETRY_WINDOW_MS = 24 * 3_600_000;
/** An endpoint whose every attempt has failed for this long is disabled… */
export const DISABLE_AFTER_FAILING_MS = 72 * 3_600_000;
/** …and so is one whose last this many attempts in a row all failed, however fast they came. */
export const DISABLE_AFTER_FAILED_ATTEMPTS = 200;

/** The wait after a delivery's `failedAttempts`-th failed attempt: 30 s, 60 s, 120 s, … capped at 1 h. */
export function retryDelayMs(failedAttempts: number): number {
  const doublings = Math.min(Math.max(failedAttempts, 1) - 1, 32);
  return Math.min(FIRST_RETRY_DELAY_MS * 2 ** doublings, MAX_RETRY_DELAY_MS);
}

/**
 * When a delivery that failed its `attempts`-th attempt at `at` is tried again, or undefined when
 * that would be past the retry window after its first attempt (the delivery has failed).
 */
export function nextAttemptAt(attempts: number, firstAttemptAt: number, at: number): number | undefined {
  const next = at + retryDelayMs(attempts);
  return next - firstAttemptAt > RETRY_WINDOW_MS ? undefined : next;
}

/** An endpoint's current run of failed attempts (none since its last success or re-enabling). */
export interface FailureStreak {
  failedAttempts: number;
  failingSince: number;
}

/** Why a streak that has just grown at `at` disables its endpoint, or undefined while it does not. */
export function disablingReason(streak: FailureStreak, at: number, lastError: string): string | undefined {
  if (streak.failedAttempts >= DISABLE_AFTER_FAILED_ATTEMPTS) {
    return `${streak.failedAttempts} attempts in a row failed (the last: ${lastError}); re-enable the endpoint with PATCH /v1/webhooks/{id} {"enabled":true} once it answers 2xx`;
  }
  if (at - streak.failingSince >= DISABLE_AFTER_FAILING_MS) {
    const hours = Math.floor((at - streak.failingSince) / 3_600_000);
    return `every attempt failed for ${hours} h, since ${new Date(streak.failingSince).toISOString()} (the last: ${lastError}); re-enable the endpoint with PATCH /v1/webhooks/{id} {"enabled":true} once it answers 2xx`;
  }
  return undefined;
}
