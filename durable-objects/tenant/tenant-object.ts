import * as v from "valibot";
import type { RpcResult } from "../../schema/errors.ts";
import type { TenantQuotas } from "../../schema/api.ts";
import type { Wire } from "../../schema/wire.ts";
import { IdempotencyStore, type IdempotencyClaim, type IdempotencyReplay } from "../rpc/idempotency.ts";
import { asResult, RpcError } from "../rpc/rpc-errors.ts";
import type { KeyInfo } from "./tenant-keys.ts";
import { TenantProviderKeys } from "./tenant-providers.ts";
import type { ProviderKeyInfo } from "../../schema/providers.ts";
import { ModelIdentitySchema, type ModelIdentity } from "../../schema/lane.ts";
import { SessionIndex, TenantDirectory, type SessionListOrder, type SessionSummary, type TenantSummary } from "./tenant-listings.ts";
import { DEFAULT_MAX_OPEN_OPERATIONS, type Reservation } from "./tenant-operations.ts";
import { TenantActivityRpc } from "./tenant-activity-rpc.ts";
import { RequestWindow } from "./request-window.ts";
import { SessionUsageMarks } from "./session-usage-marks.ts";
import { randomToken, type TenantInfo } from "./tenant-host.ts";
import type { Page } from "./time-cursor.ts";

export type { KeyInfo, Page, SessionSummary, TenantSummary };

export type { TenantInfo };

/** Requests per minute a tenant may make when no quota of its own is set. */
export const DEFAULT_REQUESTS_PER_MINUTE = 1200;


/** What a tenant holds for its providers: its own keys (listing rows) and the deployment-keys permission. */
export interface TenantProviderSettings {
  keys: ProviderKeyInfo[];
  deploymentKeys: boolean;
  /** The model of new lanes that name none, unless their session has a default of its own. */
  defaultModel: ModelIdentity | null;
}

export type Authorization = { keyId: string; limited: false } | { keyId: string; limited: true; retryAfterSeconds: number };

const encoder = new TextEncoder();

/**
 * One per tenant (ARCHITECTURE D2, D17): the tenant record, SHA-256 hashes of its API keys with
 * immediate revocation (tenant-keys.ts), the index of its sessions for listing (tenant-listings.ts),
 * its quotas (requests per minute; open operations: tenant-operations.ts) and its usage totals.
 * Keys are minted here and shown once; only their hashes are stored. Layers below: the sessions'
 * reports and the webhooks (tenant/tenant-activity-rpc.ts), the schema, the stores and the shared
 * alarm (tenant/tenant-host.ts).
 *
 * Storage exists only once the admin created the tenant (sql/lazy-schema.ts): anyone can name a
 * tenant object with a garbage key `sk_<anyTenant>_…`, and such a request must write nothing.
 * Every method but `createTenant` and the idempotency claim (admin or authenticated traffic only)
 * answers "no such tenant" without writing when the schema is absent.
 *
 * Two objects of this class are not tenants (their names contain ':', which no tenant id can):
 * "admin:idempotency" remembers the admin's Idempotency-Keys, and "admin:directory" lists the
 * tenants for the admin. The directory reuses this class (its table is one more of this class's
 * append-only migrations) rather than a class of its own, which would need a new class migration
 * in wrangler.toml for one small table; it is touched only by admin calls, never per request.
 */
export class TenantObject extends TenantActivityRpc {
  private readonly requestWindow = new RequestWindow(this.ctx.storage.sql);

  async createTenant(id: string, name: string): Promise<Wire<RpcResult<TenantInfo>>> {
    return asResult(() => {
      const existing = this.tenant();
      if (existing) throw new RpcError({ code: "TenantExists", message: `Tenant ${id} already exists`, details: { createdAt: existing.createdAt, name: existing.name } });
      this.schema.create();
      const createdAt = Date.now();
      this.ctx.storage.sql.exec("INSERT INTO tenant (singleton, tenant_id, name, created_at) VALUES (1, ?, ?, ?)", id, name, createdAt);
      return { id, name, createdAt };
    });
  }

  async info(): Promise<Wire<RpcResult<TenantInfo>>> {
    return asResult(() => this.requireTenant());
  }

  /** Mints `sk_<tenantId>_<random>`; the key is returned once and never stored. */
  async createKey(name: string): Promise<Wire<RpcResult<{ keyId: string; key: string }>>> {
    return asResult(async () => {
      const tenant = this.requireTenant();
      const key = `sk_${tenant.id}_${randomToken(32)}`;
      const keyId = `key_${randomToken(12)}`;
      const hash = await sha256Hex(key);
      this.keys().insert(keyId, hash, name, Date.now());
      return { keyId, key };
    });
  }

  /**
   * Effective on the next request: verification reads this row every time (no cache). The key's
   * open watch sockets are closed before the answer (a batch of sessions; the alarm does the rest).
   */
  async revokeKey(keyId: string): Promise<Wire<RpcResult<{ revoked: boolean }>>> {
    return asResult(async () => {
      this.requireTenant();
      this.keys().revoke(keyId, Date.now());
      await this.armNoLaterThan(await this.watches().closeRevoked(Date.now()));
      return { revoked: true };
    });
  }

  /** The tenant's keys for the admin (ids, names, times; never a secret). */
  async listKeys(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<KeyInfo>>>> {
    return asResult(() => {
      this.requireTenant();
      return this.keys().list(limit, cursor);
    });
  }

  /** A session accepted a watch socket opened with `keyId` (tenant-watches.ts); inactive: the key is revoked. */
  async registerWatch(keyId: string, sessionId: string): Promise<{ active: boolean }> {
    // Only a tenant (whose key opened the socket) has a schema; anything else is no active key.
    if (!this.schema.exists) return { active: false };
    return this.watches().register(keyId, sessionId, Date.now());
  }

  /** The key id for a presented key's hash, or null (unknown or revoked), compared in constant time. */
  async verifyKey(hash: string): Promise<{ keyId: string } | null> {
    return this.schema.exists ? this.keys().use(hash, Date.now()) : null;
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
    return { authorization: admitted.authorization, reservation: this.operations().reserve(sessionId, lane, admitted.quotas.maxOpenOperations, now) };
  }

  /** The verdict with the quotas it read, so a reservation after it reads them no second time. */
  private authorizeNow(hash: string, now: number): { authorization: Authorization; quotas: TenantQuotas } | null {
    if (!this.schema.exists) return null;
    const key = this.keys().use(hash, now);
    if (!key) return null;
    const quotas = this.quotas();
    const verdict = this.requestWindow.admit(now, quotas.requestsPerMinute);
    if (verdict.limited) return { authorization: { keyId: key.keyId, limited: true, retryAfterSeconds: verdict.retryAfterSeconds }, quotas };
    return { authorization: { keyId: key.keyId, limited: false }, quotas };
  }

  async getQuotas(): Promise<Wire<RpcResult<TenantQuotas>>> {
    return asResult(() => {
      this.requireTenant();
      return this.quotas();
    });
  }

  async setQuotas(quotas: Partial<TenantQuotas>): Promise<Wire<RpcResult<TenantQuotas>>> {
    return asResult(() => {
      this.requireTenant();
      if (quotas.requestsPerMinute !== undefined) {
        this.ctx.storage.sql.exec("UPDATE tenant SET requests_per_minute = ? WHERE singleton = 1", quotas.requestsPerMinute);
      }
      if (quotas.maxOpenOperations !== undefined) {
        this.ctx.storage.sql.exec("UPDATE tenant SET max_open_operations = ? WHERE singleton = 1", quotas.maxOpenOperations);
      }
      if (quotas.deploymentKeys !== undefined) {
        this.ctx.storage.sql.exec("UPDATE tenant SET deployment_keys = ? WHERE singleton = 1", quotas.deploymentKeys ? 1 : 0);
      }
      return this.quotas();
    });
  }

  private quotas(): TenantQuotas {
    const row = this.ctx.storage.sql
      .exec<{ requests_per_minute: number | null; max_open_operations: number | null; deployment_keys: number | null }>(
        "SELECT requests_per_minute, max_open_operations, deployment_keys FROM tenant WHERE singleton = 1",
      )
      .toArray()[0];
    return {
      requestsPerMinute: row?.requests_per_minute ?? DEFAULT_REQUESTS_PER_MINUTE,
      maxOpenOperations: row?.max_open_operations ?? DEFAULT_MAX_OPEN_OPERATIONS,
      deploymentKeys: row?.deployment_keys !== 0,
    };
  }

  // Provider keys (bring your own key, tenant-providers.ts).

  /** Stores (or replaces) the tenant's key for `provider`; the answer never holds the key. */
  async putProviderKey(provider: string, apiKey: string, baseUrl: string | undefined): Promise<Wire<RpcResult<ProviderKeyInfo>>> {
    return asResult(async () => {
      const tenant = this.requireTenant();
      const keys = this.providerKeys(tenant.id);
      const sealed = await keys.seal(provider, apiKey);
      // The seal is awaited before the SQL turn: the tenant is read again in the writing turn.
      this.requireTenant();
      return keys.write(provider, sealed, apiKey, baseUrl, Date.now());
    });
  }

  async deleteProviderKey(provider: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(() => {
      this.providerKeys(this.requireTenant().id).delete(provider);
      return { deleted: true as const };
    });
  }

  async providerSettings(): Promise<Wire<RpcResult<TenantProviderSettings>>> {
    return asResult(() => {
      const tenant = this.requireTenant();
      return { keys: this.providerKeys(tenant.id).list(), deploymentKeys: this.quotas().deploymentKeys, defaultModel: this.defaultModel() };
    });
  }

  /**
   * Sets (or, with null, removes) the tenant's default model. The caller checked that the tenant
   * can use it; a lane creation checks again, since keys come and go.
   */
  async setDefaultModel(model: ModelIdentity | null): Promise<Wire<RpcResult<{ defaultModel: ModelIdentity | null }>>> {
    return asResult(() => {
      this.requireTenant();
      const stored = model && { provider: model.provider, modelId: model.modelId };
      this.ctx.storage.sql.exec("UPDATE tenant SET default_model = ? WHERE singleton = 1", stored ? JSON.stringify(stored) : null);
      return { defaultModel: stored };
    });
  }

  private defaultModel(): ModelIdentity | null {
    const row = this.ctx.storage.sql.exec<{ default_model: string | null }>("SELECT default_model FROM tenant WHERE singleton = 1").toArray()[0];
    if (!row?.default_model) return null;
    const parsed = v.safeParse(ModelIdentitySchema, JSON.parse(row.default_model));
    return parsed.success ? parsed.output : null;
  }

  /**
   * One provider request's credentials, asked by the tenant's own session objects only (the RPC
   * is not reachable from the API): the plain key, held by the caller for that request alone.
   */
  async providerGrant(provider: string): Promise<{ key?: { apiKey: string; baseUrl?: string }; deploymentKeys: boolean }> {
    const tenant = this.tenant();
    if (!tenant) return { deploymentKeys: false };
    const deploymentKeys = this.quotas().deploymentKeys;
    const key = await this.providerKeys(tenant.id).open(provider);
    return { ...(key && { key }), deploymentKeys };
  }

  private providerKeys(tenantId: string): TenantProviderKeys {
    return new TenantProviderKeys(this.ctx.storage.sql, this.env.SECRETS_KEY, tenantId);
  }

  /**
   * Takes a slot of the open-operations quota for an accept about to be made on `sessionId`/`lane`,
   * in one synchronous turn (D5): expired unbound reservations are dropped, the rest counted.
   */
  async reserveOperation(sessionId: string, lane: string, now = Date.now()): Promise<Reservation> {
    if (!this.schema.exists) return { ok: false, openOperations: [] };
    return this.operations().reserve(sessionId, lane, this.quotas().maxOpenOperations, now);
  }

  /** The accept succeeded: the reservation's slot now belongs to `operationId`. */
  async bindOperation(reservationId: string, operationId: string): Promise<void> {
    if (this.schema.exists) this.operations().bind(reservationId, operationId, Date.now());
  }

  // The session index: what a listing shows, so that a listing touches this object only.

  /** Idempotent (a retried creation refreshes the row); called before creation answers. */
  async registerSession(summary: SessionSummary): Promise<void> {
    if (this.schema.exists) new SessionIndex(this.ctx.storage.sql).register(summary);
  }

  async renameSession(sessionId: string, name: string | null): Promise<void> {
    if (this.schema.exists) new SessionIndex(this.ctx.storage.sql).rename(sessionId, name);
  }

  /** The session's usage mark goes with it (a session created again under its id starts a new ledger). */
  async unregisterSession(sessionId: string): Promise<void> {
    if (!this.schema.exists) return;
    new SessionIndex(this.ctx.storage.sql).unregister(sessionId);
    new SessionUsageMarks(this.ctx.storage.sql).forget(sessionId);
  }

  /** Sessions in creation order or newest first, a page at a time; the cursor is opaque to clients. */
  async listSessions(limit: number, cursor: string | undefined, order: SessionListOrder = "asc"): Promise<Wire<RpcResult<Page<SessionSummary>>>> {
    return asResult(() => (this.schema.exists ? new SessionIndex(this.ctx.storage.sql).list(limit, cursor, order) : { items: [], nextCursor: null }));
  }

  // The directory (only on the object named "admin:directory"): the admin's list of tenants.

  /** Idempotent; the admin's tenant creation proves the directory should exist. */
  async registerTenant(tenant: TenantSummary): Promise<void> {
    this.schema.create();
    new TenantDirectory(this.ctx.storage.sql).register(tenant);
  }

  async listTenants(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<TenantSummary>>>> {
    return asResult(() => (this.schema.exists ? new TenantDirectory(this.ctx.storage.sql).list(limit, cursor) : { items: [], nextCursor: null }));
  }

  /**
   * D15: claim an Idempotency-Key (scoped by the caller to its route) for a creating POST this
   * object owns. Only admin and authenticated traffic gets here, so the claim may create storage.
   */
  async idempotencyClaim(key: string, requestHash: string): Promise<IdempotencyClaim> {
    this.schema.create();
    return new IdempotencyStore(this.ctx.storage.sql).claim(key, requestHash);
  }

  async idempotencyComplete(key: string, requestHash: string, replay: IdempotencyReplay | null): Promise<void> {
    if (this.schema.exists) new IdempotencyStore(this.ctx.storage.sql).complete(key, requestHash, replay);
  }

}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

