/**
 * How long a key verified by its tenant's object is trusted in this isolate without asking again:
 * the bound on how long a revoked key can still be used on another isolate (QUALITY R4: refused
 * within 5 s everywhere; at once on the isolate that revoked it, which drops the key then).
 */
export const KEY_TRUST_MS = 5_000;
/** At most this many verified keys are held per isolate (the oldest are dropped first). */
const VERIFIED_MAX = 10_000;

export interface VerifiedKey {
  tenantId: string;
  keyId: string;
  verifiedAt: number;
}

/**
 * Keys (by SHA-256 hash) their tenant's object verified recently in this isolate, so a warm
 * isolate authenticates a request without calling the object. `verifiedAt` is when the
 * verification was asked for (not answered), so the trust never outlives the bound. A plain class:
 * the clock is a parameter, so a test runs two of them (two isolates) against one clock.
 */
export class VerifiedKeys {
  private readonly byHash = new Map<string, VerifiedKey>();
  /** Counts revocations through this isolate: a verification asked before one is not remembered. */
  private revocations = 0;

  /** Taken when a verification is asked for, and handed back to `remember` with its answer. */
  generation(): number {
    return this.revocations;
  }

  /** The key verified within KEY_TRUST_MS before `now`, or undefined (then it must be verified again). */
  get(hash: string, now: number): VerifiedKey | undefined {
    const verified = this.byHash.get(hash);
    if (!verified) return undefined;
    if (now - verified.verifiedAt < KEY_TRUST_MS) return verified;
    this.byHash.delete(hash);
    return undefined;
  }

  /**
   * A verification's answer, unless a key was revoked through this isolate since it was asked for
   * (`generation`): the object may have verified the key just before the revocation, and the
   * isolate that revoked must refuse it at once.
   */
  remember(hash: string, key: VerifiedKey, generation: number): void {
    if (generation !== this.revocations) return;
    this.byHash.delete(hash);
    this.byHash.set(hash, key);
    if (this.byHash.size > VERIFIED_MAX) {
      const oldest = this.byHash.keys().next().value;
      if (oldest !== undefined) this.byHash.delete(oldest);
    }
  }

  /** A key the tenant's object refused (unknown or revoked). */
  forget(hash: string): void {
    this.byHash.delete(hash);
  }

  /** A tenant deleted through this isolate: every key of it refused here from now on. */
  forgetTenant(tenantId: string): void {
    this.revocations += 1;
    for (const [hash, key] of this.byHash) {
      if (key.tenantId === tenantId) this.byHash.delete(hash);
    }
  }

  /** A key revoked through this isolate: refused here from now on, before the revocation answers. */
  forgetKey(tenantId: string, keyId: string): void {
    this.revocations += 1;
    for (const [hash, key] of this.byHash) {
      if (key.tenantId === tenantId && key.keyId === keyId) this.byHash.delete(hash);
    }
  }
}

/** This isolate's verified keys. */
export const verifiedKeys = new VerifiedKeys();
