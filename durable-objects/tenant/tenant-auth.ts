import type { RpcResult } from "../../schema/errors.ts";
import type { TenantQuotas } from "../../schema/api.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import { sha256Hex, type KeyInfo } from "./tenant-keys.ts";
import type { Reservation } from "./tenant-operations.ts";
import { randomToken, type TenantHost } from "./tenant-host.ts";
import type { Page } from "./time-cursor.ts";

export type Authorization = { keyId: string; limited: false } | { keyId: string; limited: true; retryAfterSeconds: number };

/**
 * The tenant's API keys (ARCHITECTURE D17), as the admin manages them (minted here and shown once,
 * only their hashes stored; revoked immediately, open watch sockets included) and as every request
 * presents them: verified and counted against the per-minute quota in one synchronous turn,
 * together with the open-operation reservation on the prompt path.
 */
export class TenantAuth {
  constructor(private readonly host: TenantHost) {}

  /** Mints `sk_<tenantId>_<random>`; the key is returned once and never stored. */
  async createKey(name: string): Promise<Wire<RpcResult<{ keyId: string; key: string }>>> {
    return asResult(async () => {
      const tenant = this.host.requireTenant();
      const key = `sk_${tenant.id}_${randomToken(32)}`;
      const keyId = `key_${randomToken(12)}`;
      const hash = await sha256Hex(key);
      this.host.keys().insert(keyId, hash, name, Date.now());
      return { keyId, key };
    });
  }

  /**
   * Effective on the next request: verification reads this row every time (no cache). The key's
   * open watch sockets are closed before the answer (a batch of sessions; the alarm does the rest).
   */
  async revokeKey(keyId: string): Promise<Wire<RpcResult<{ revoked: boolean }>>> {
    return asResult(async () => {
      this.host.requireTenant();
      this.host.keys().revoke(keyId, Date.now());
      await this.host.armNoLaterThan(await this.host.watches().closeRevoked(Date.now()));
      return { revoked: true };
    });
  }

  /** The tenant's keys for the admin (ids, names, times; never a secret). */
  async listKeys(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<KeyInfo>>>> {
    return asResult(() => {
      this.host.requireTenant();
      return this.host.keys().list(limit, cursor);
    });
  }

  /** A session accepted a watch socket opened with `keyId` (tenant-watches.ts); inactive: the key is revoked. */
  async registerWatch(keyId: string, sessionId: string): Promise<{ active: boolean }> {
    // Only a tenant (whose key opened the socket) has a schema; anything else is no active key.
    if (!this.host.schema.exists) return { active: false };
    return this.host.watches().register(keyId, sessionId, Date.now());
  }

  /** The key id for a presented key's hash, or null (unknown or revoked), compared in constant time. */
  async verifyKey(hash: string): Promise<{ keyId: string } | null> {
    return this.host.schema.exists ? this.host.keys().use(hash, Date.now()) : null;
  }

  /**
   * Authenticates a request and counts it against the tenant's per-minute quota in one
   * synchronous turn (no await between the count's read and its write). Null: not authenticated,
   * and then nothing was written (an object that is no tenant stays without storage).
   */
  async authorize(hash: string, now = Date.now()): Promise<Authorization | null> {
    return this.authorizeNow(hash, now)?.authorization ?? null;
  }

  /**
   * `authorize` and, when it admits the request, `reserveOperation` in the same synchronous turn: one
   * call on the prompt path instead of two sequential ones. Nothing is reserved for a request that
   * is not authenticated or is over its per-minute quota.
   */
  async authorizeAndReserve(hash: string, sessionId: string, lane: string, now = Date.now()): Promise<{ authorization: Authorization | null; reservation: Reservation }> {
    const admitted = this.authorizeNow(hash, now);
    if (!admitted || admitted.authorization.limited) return { authorization: admitted?.authorization ?? null, reservation: { ok: false, openOperations: [] } };
    return { authorization: admitted.authorization, reservation: this.host.operations().reserve(sessionId, lane, admitted.quotas.maxOpenOperations, now) };
  }

  /** The verdict with the quotas it read, so a reservation after it reads them no second time. */
  private authorizeNow(hash: string, now: number): { authorization: Authorization; quotas: TenantQuotas } | null {
    if (!this.host.schema.exists) return null;
    const key = this.host.keys().use(hash, now);
    if (!key) return null;
    const quotas = this.host.quotas();
    const verdict = this.host.requestWindow.admit(now, quotas.requestsPerMinute);
    if (verdict.limited) return { authorization: { keyId: key.keyId, limited: true, retryAfterSeconds: verdict.retryAfterSeconds }, quotas };
    return { authorization: { keyId: key.keyId, limited: false }, quotas };
  }
}
