import type { RetryPolicy } from "../../schema/settings.ts";
import { value } from "../session/addresses.ts";
import type { HarnessResources, HarnessSettings } from "../../schema/settings.ts";
import type { NormalizedRetryPolicy } from "./types.ts";

// Durable harness settings and resources (ARCHITECTURE D6): session values, read at attachment,
// replaced through the harness, captured into each operation at acceptance.

export const settingsAddress = value<HarnessSettings>("pi.settings");
export const resourcesAddress = value<HarnessResources>("pi.resources");

export function normalizeRetryPolicy(policy: RetryPolicy): NormalizedRetryPolicy {
  return { maxAttempts: policy.enabled ? policy.maxRetries + 1 : 1, baseDelayMs: policy.baseDelayMs };
}

/** Backoff for failed attempt n: base × 2^(n−1), saturating at MAX_SAFE_INTEGER (§3.10). */
export function retryDelay(policy: NormalizedRetryPolicy, failedAttempt: number): number {
  const delay = policy.baseDelayMs * 2 ** Math.max(0, failedAttempt - 1);
  return Math.min(delay, Number.MAX_SAFE_INTEGER);
}

export function notBeforeOf(now: number, delay: number): number {
  return Math.min(now + delay, Number.MAX_SAFE_INTEGER);
}
