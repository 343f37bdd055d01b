import type { RpcResult } from "../../schema/errors.ts";
import type { TenantQuotas } from "../../schema/api.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, RpcError } from "../rpc/rpc-errors.ts";
import { keySecretNotReplayed, sha256Hex, type KeyInfo } from "./tenant-keys.ts";
import type { LeaseGrant } from "./request-window.ts";
import type { Reservation } from "./tenant-operations.ts";
import { randomToken, type TenantHost } from "./tenant-host.ts";
import type { Page } from "./time-cursor.ts";

/** A verified key's id with its quota lease (request-window.ts), or with the refusal when the minute's quota is used up. */
export type Authorization = { keyId: string } & LeaseGrant;

/**
 * The tenant's API keys (ARCHITECTURE D17), as the admin manages them (minted here and shown once,
 * only their hashes stored; revoked here at once, open watch sockets included) and as requests
 * present them: verified together with a lease of the per-minute request quota in one synchronous
 * turn (and the open-operation reservation on the prompt path). The front worker trusts a
 * verification for a few seconds and spends its lease without calling here (worker/middleware/auth.ts).
 */
export class TenantAuth {
  constructor(private readonly host: TenantHost) {}

  /**
   * Mints `sk_<tenantId>_<random>`; the key is returned once and never stored. `derivedKeyId`
   * (from the request's Idempotency-Key) names the key a retry would create again: when it exists,
   * the first request created it and lost its answer, and the retry says so instead of minting a
   * second key (409 KeySecretNotReplayed, as a replay of its answer would).
   */
  async createKey(name: string, derivedKeyId?: string): Promise<Wire<RpcResult<{ keyId: string; key: string }>>> {
    return asResult(async () => {
      const tenant = this.host.requireActiveTenant();
      const key = `sk_${tenant.id}_${randomToken(32)}`;
      const keyId = derivedKeyId ?? `key_${randomToken(12)}`;
      const hash = await sha256Hex(key);
      const keys = this.host.keys();
      // Checked after the await, in the same synchronous turn as the insert: a deletion begun
      // during the digest, and a retry's key, both stand.
      this.host.requireActiveTenant();
      if (keys.has(keyId)) throw new RpcError(keySecretNotReplayed(keyId));
      keys.insert(keyId, hash, name, Date.now());
      return { keyId, key };
    });
  }

  /**
   * Effective on the key's next verification here, which reads this row every time; the front
   * worker trusts a verification for at most KEY_TRUST_MS (worker/middleware/verified-keys.ts) and
   * the isolate that revoked drops it at once. The key's open watch sockets are closed before the
   * answer (a batch of sessions; the alarm does the rest).
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
   * Authenticates a key and, when `wanted` > 0, leases up to that many requests of the tenant's
   * per-minute quota (request-window.ts: counted and saved before the answer), in one synchronous
   * turn. `wanted` 0 only checks the key (its caller spends a lease it holds). Null: not
   * authenticated, and then nothing was written (an object that is no tenant stays without storage).
   */
  async authorizeLease(hash: string, wanted: number, now = Date.now()): Promise<Authorization | null> {
    return this.authorizeNow(hash, wanted, now)?.authorization ?? null;
  }

  /**
   * `authorizeLease` and, when it admits the request, `reserveOperation` in the same synchronous
   * turn: one call on the prompt path instead of two sequential ones. Nothing is reserved for a
   * request that is not authenticated or is over its per-minute quota.
   */
  async authorizeAndReserve(hash: string, sessionId: string, lane: string, wanted: number, now = Date.now()): Promise<{ authorization: Authorization | null; reservation: Reservation }> {
    const admitted = this.authorizeNow(hash, wanted, now);
    if (!admitted || admitted.authorization.limited) return { authorization: admitted?.authorization ?? null, reservation: { ok: false, openOperations: [] } };
    return { authorization: admitted.authorization, reservation: this.host.operations().reserve(sessionId, lane, admitted.quotas.maxOpenOperations, now, this.host.webhooks().hasEndpoints()) };
  }

  /** The verdict with the quotas it read, so a reservation after it reads them no second time. */
  private authorizeNow(hash: string, wanted: number, now: number): { authorization: Authorization; quotas: TenantQuotas } | null {
    if (!this.host.schema.exists) return null;
    const key = this.host.keys().use(hash, now);
    if (!key) return null;
    const quotas = this.host.quotas();
    return { authorization: { keyId: key.keyId, ...this.host.requestWindow.grant(now, quotas.requestsPerMinute, wanted) }, quotas };
  }
}
