import type { AppContext } from "../env.ts";
import { fail } from "../http-error.ts";

/** How long a key that authenticated is remembered in this isolate as proven. */
const PROVEN_TTL_MS = 10 * 60_000;
/** At most this many proven keys are remembered per isolate (the oldest are forgotten first). */
const PROVEN_MAX = 10_000;

/**
 * Keys (and the admin token) that authenticated recently in this isolate, by hash. Only the
 * failed-authentication limit reads this: a remembered key skips it, and is still verified, by
 * its tenant's object (trusted for at most KEY_TRUST_MS: verified-keys.ts) or against the admin
 * token on every request.
 */
class ProvenKeys {
  private readonly until = new Map<string, number>();

  has(hash: string, now: number): boolean {
    const until = this.until.get(hash);
    if (until === undefined) return false;
    if (until > now) return true;
    this.until.delete(hash);
    return false;
  }

  remember(hash: string, now: number): void {
    this.until.delete(hash);
    this.until.set(hash, now + PROVEN_TTL_MS);
    if (this.until.size > PROVEN_MAX) {
      const oldest = this.until.keys().next().value;
      if (oldest !== undefined) this.until.delete(oldest);
    }
  }

  forget(hash: string): void {
    this.until.delete(hash);
  }
}

export const provenKeys = new ProvenKeys();

/** What an unproven authentication names: a tenant (by the id its key carries), or the admin. */
export type AuthSubject = { tenantId: string } | "admin";

/**
 * Whether one more unproven authentication may be checked now. Every key (or admin token) this
 * isolate has not seen succeed counts, against its source address and against what it names (the
 * tenant of a key, or the admin), before it is checked; so garbage keys cannot hammer one victim
 * tenant's object nor, from one source, many of them, and the admin token cannot be guessed at
 * more than the same pace.
 *
 * The counters are the platform's rate limiting bindings (`[[ratelimits]]` in wrangler.toml):
 * shared by every isolate of a location, kept outside any object (a counter in the TenantObject
 * would itself be state created and written by the attacker's traffic), and available in
 * wrangler dev and the test pool. Per-isolate memory alone would let an attacker spread over
 * isolates. The counts are approximate and per location, which is what abuse protection needs.
 * While a tenant is over its limit, a key that authenticated recently in the same isolate still
 * gets through; a client on a fresh isolate is refused with `Retry-After` until the minute passes.
 * Requests without a source address (service bindings, tests) are limited per tenant only.
 */
export async function unprovenAllowed(env: Env, subject: AuthSubject, source: string | undefined): Promise<boolean> {
  const [bySource, bySubject] = await Promise.all([
    source === undefined ? { success: true } : env.AUTH_SOURCE_LIMIT.limit({ key: `source:${source}` }),
    // The admin is counted like one more tenant, under a key no tenant's can be.
    env.AUTH_TENANT_LIMIT.limit({ key: subject === "admin" ? "admin" : `tenant:${subject.tenantId}` }),
  ]);
  return bySource.success && bySubject.success;
}

/** The window of both limits: a refused client retries after it. */
export const UNPROVEN_RETRY_AFTER_SECONDS = 60;

/** The failed-authentication limit: 429 RateLimited for a credential not proven in this isolate, past the limit. */
export async function limitUnproven(c: AppContext, proof: string, subject: AuthSubject): Promise<void> {
  if (provenKeys.has(proof, Date.now()) || (await unprovenAllowed(c.env, subject, c.req.header("cf-connecting-ip")))) return;
  throw fail("RateLimited", `Too many failed authentications; retry in ${UNPROVEN_RETRY_AFTER_SECONDS} s`, {
    retryAfterSeconds: UNPROVEN_RETRY_AFTER_SECONDS,
  });
}
