import { KEY_TRUST_MS } from "./verified-keys.ts";

/** At most this many sessions' creation times are held per isolate (the oldest are dropped first). */
const KNOWN_MAX = 10_000;

interface Known {
  createdAt: number;
  checkedAt: number;
}

/**
 * The creation time of sessions browser tokens were presented for, as their objects told this
 * isolate recently. A token names the session it was minted for by id and creation time: a session
 * deleted and created again under its id is a new one, which the old session's tokens must not
 * reach. Trusted for KEY_TRUST_MS, the same bound as a revoked key's (QUALITY R4), so a warm
 * isolate asks the object at most once per session in that time; a session deleted through this
 * isolate is forgotten at once. A plain class: the clock is a parameter.
 */
export class SessionIncarnations {
  private readonly byName = new Map<string, Known>();

  /** The creation time learnt within KEY_TRUST_MS before `now`, or undefined (ask the object). */
  get(tenantId: string, sessionId: string, now: number): number | undefined {
    const name = `${tenantId}:${sessionId}`;
    const known = this.byName.get(name);
    if (!known) return undefined;
    if (now - known.checkedAt < KEY_TRUST_MS) return known.createdAt;
    this.byName.delete(name);
    return undefined;
  }

  /** `checkedAt`: when the object was asked (not answered), so the trust never outlives the bound. */
  remember(tenantId: string, sessionId: string, createdAt: number, checkedAt: number): void {
    const name = `${tenantId}:${sessionId}`;
    this.byName.delete(name);
    this.byName.set(name, { createdAt, checkedAt });
    if (this.byName.size > KNOWN_MAX) {
      const oldest = this.byName.keys().next().value;
      if (oldest !== undefined) this.byName.delete(oldest);
    }
  }

  /** A session deleted through this isolate: its tokens are checked with its object again. */
  forget(tenantId: string, sessionId: string): void {
    this.byName.delete(`${tenantId}:${sessionId}`);
  }
}

/** This isolate's known session creation times. */
export const sessionIncarnations = new SessionIncarnations();
