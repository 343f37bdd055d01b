import type { ApiError } from "../../schema/errors.ts";

/** Overloaded objects get a longer pause: retrying sooner only feeds the queue that overloaded them. */
const OVERLOADED_RETRY_AFTER_SECONDS = 5;
const TRANSIENT_RETRY_AFTER_SECONDS = 1;

/**
 * The runtime's infrastructure errors as a documented API error (ARCHITECTURE D16): 503
 * `Overloaded` with `Retry-After` instead of a 500. Workers RPC marks them with properties on the
 * thrown error (platform reference §1.7, §1.9): `overloaded` (too many requests queued for one
 * object: not retried here), `retryable` (a transient failure, e.g. "Network connection lost") and
 * `durableObjectReset` (the object was reset: code update, `ctx.abort()`, an exceeded limit;
 * storage is intact). Anything else, the 32 MiB RPC limit included, is a bug: undefined here, a
 * logged 500 at the edge.
 */
export function platformFailure(error: unknown): ApiError | undefined {
  if (!(error instanceof Error)) return undefined;
  if ("overloaded" in error && error.overloaded === true) {
    return overloaded("overloaded", OVERLOADED_RETRY_AFTER_SECONDS, `The service is overloaded; retry in ${OVERLOADED_RETRY_AFTER_SECONDS} s`);
  }
  if ("durableObjectReset" in error && error.durableObjectReset === true) {
    return overloaded("reset", TRANSIENT_RETRY_AFTER_SECONDS, "The request was interrupted by a restart of the service; retry it");
  }
  if ("retryable" in error && error.retryable === true) {
    return overloaded("transient", TRANSIENT_RETRY_AFTER_SECONDS, "The request failed on a transient error; retry it");
  }
  return undefined;
}

function overloaded(reason: string, retryAfterSeconds: number, message: string): ApiError {
  // A creating POST may or may not have taken effect: the same Idempotency-Key makes the retry safe.
  return { code: "Overloaded", message: `${message} (a creating POST with the same Idempotency-Key)`, details: { reason, retryAfterSeconds } };
}
