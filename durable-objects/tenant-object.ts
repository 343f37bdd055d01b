import { DurableObject } from "cloudflare:workers";
import * as v from "valibot";
import type { RpcResult } from "../schema/errors.ts";
import type { Usage } from "../schema/usage.ts";
import type { Wire } from "../schema/wire.ts";
import { zeroUsage } from "../harness/session/usage.ts";
import { IdempotencyStore, type IdempotencyClaim, type IdempotencyReplay } from "./idempotency.ts";
import { asResult, RpcError } from "./rpc-errors.ts";
import { LazySchema } from "./sql/lazy-schema.ts";
import { TENANT_MIGRATIONS } from "./sql/tenant-migrations.ts";
import { TenantKeys, type KeyInfo } from "./tenant-keys.ts";
import { TenantProviderKeys } from "./tenant-providers.ts";
import type { ProviderKeyInfo } from "../schema/providers.ts";
import { ModelIdentitySchema, type ModelIdentity } from "../schema/lane.ts";
import { SessionIndex, TenantDirectory, type SessionSummary, type TenantSummary } from "./tenant-listings.ts";
import { DEFAULT_MAX_OPEN_OPERATIONS, TenantOperations, type Reservation } from "./tenant-operations.ts";
import { TenantWatches } from "./tenant-watches.ts";
import { settledEvent, TenantWebhooks, type EnqueuedEvent } from "./tenant-webhooks.ts";
import { deliverDue, newWebhookSecret, sealWebhookSecret } from "./webhook-delivery.ts";
import type { SettledOperation } from "./session/settlement-outbox.ts";
import type { CreatedWebhook, WebhookDelivery, WebhookEndpoint, WebhookEventType } from "../schema/webhooks.ts";
import type { Page } from "./time-cursor.ts";

export type { KeyInfo, Page, SessionSummary, TenantSummary };

export interface TenantInfo {
  id: string;
  name: string;
  createdAt: number;
}

/** Requests per minute a tenant may make when no quota of its own is set. */
export const DEFAULT_REQUESTS_PER_MINUTE = 1200;

export interface TenantQuotas {
  requestsPerMinute: number;
  /** Operations the tenant may have open (accepted, not yet settled) at once, across its sessions. */
  maxOpenOperations: number;
  /** Whether the tenant may use the deployment's own provider keys. */
  deploymentKeys: boolean;
}

/** What a tenant holds for its providers: its own keys (listing rows) and the deployment-keys permission. */
export interface TenantProviderSettings {
  keys: ProviderKeyInfo[];
  deploymentKeys: boolean;
  /** The model of new lanes that name none, unless their session has a default of its own. */
  defaultModel: ModelIdentity | null;
}

export type Authorization = { keyId: string; limited: false } | { keyId: string; limited: true; retryAfterSeconds: number };

type TenantRow = { tenant_id: string; name: string; created_at: number };

const encoder = new TextEncoder();

/**
 * One per tenant (ARCHITECTURE D2, D17): the tenant record, SHA-256 hashes of its API keys with
 * immediate revocation (tenant-keys.ts), the index of its sessions for listing (tenant-listings.ts),
 * its quotas (requests per minute; open operations: tenant-operations.ts) and its usage totals.
 * Keys are minted here and shown once; only their hashes are stored.
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
export class TenantObject extends DurableObject<Env> {
  private readonly schema: LazySchema;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.schema = new LazySchema(ctx.storage, TENANT_MIGRATIONS);
  }

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

  /**
   * The one alarm, shared: it continues closing revoked keys' watch sockets (past a batch or after
   * a failed notification) and sends due webhook deliveries. Both are driven by their tables, so
   * each run recomputes when it is wanted next and arms that, last (a failing part never leaves
   * the other unscheduled).
   */
  override async alarm(): Promise<void> {
    const tenant = this.tenant();
    if (!tenant) return;
    const now = Date.now();
    const [watches, deliveries] = await Promise.all([
      this.watches().closeRevoked(now).catch(() => now + ALARM_RETRY_MS),
      deliverDue(this.webhooks(), { tenantId: tenant.id, secretsKey: this.env.SECRETS_KEY, allowLoopback: this.env.LOCAL_DEV === "on" }, now).catch(() => now + ALARM_RETRY_MS),
    ]);
    const next = earliestOf(watches, deliveries);
    if (next !== undefined) await this.ctx.storage.setAlarm(next);
  }

  /** Outside the alarm: make sure it fires by `at` without postponing an earlier one. */
  private async armNoLaterThan(at: number | undefined): Promise<void> {
    if (at === undefined) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(at);
  }

  private watches(): TenantWatches {
    return new TenantWatches(this.ctx.storage.sql, (sessionId, keyId) => {
      const tenant = this.requireTenant();
      // The session object's name (ARCHITECTURE D2), as the front worker derives it.
      return this.env.SESSIONS.getByName(`${tenant.id}:${sessionId}`).closeWatchesOfKey(keyId);
    });
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
    if (!this.schema.exists) return null;
    const key = this.keys().use(hash, now);
    if (!key) return null;
    const limit = this.quotas().requestsPerMinute;
    const windowStart = now - (now % 60_000);
    const current = this.ctx.storage.sql
      .exec<{ window_start: number; count: number }>("SELECT window_start, count FROM request_window WHERE singleton = 1")
      .toArray()[0];
    const count = current && current.window_start === windowStart ? current.count : 0;
    if (count >= limit) return { keyId: key.keyId, limited: true, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + 60_000 - now) / 1000)) };
    this.ctx.storage.sql.exec(
      `INSERT INTO request_window (singleton, window_start, count) VALUES (1, ?, ?)
       ON CONFLICT (singleton) DO UPDATE SET window_start = excluded.window_start, count = excluded.count`,
      windowStart,
      count + 1,
    );
    return { keyId: key.keyId, limited: false };
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

  /**
   * A session's settlement outbox forwards its settled operations here (one call per batch, after
   * their commit, repeated after a crash): their open-operation slots are freed and one webhook
   * delivery per subscribed endpoint is enqueued. Idempotent: a release is, and an event id is
   * derived from session and operation, so a repeated forward enqueues nothing twice.
   */
  async operationsSettled(sessionId: string, operations: SettledOperation[]): Promise<void> {
    if (!this.schema.exists) return;
    const events = (await Promise.all(operations.map((operation) => settledEvent(sessionId, operation)))).filter(
      (event): event is EnqueuedEvent => event !== undefined,
    );
    // All or nothing: a batch that fails to apply leaves the slots held and the session retries it.
    const now = Date.now();
    const enqueued = this.ctx.storage.transactionSync(() => {
      const ledger = this.operations();
      for (const operation of operations) ledger.release(operation.operationId, now);
      return this.webhooks().enqueue(events, now);
    });
    if (enqueued > 0) await this.armNoLaterThan(now);
  }

  /** Frees a slot by operation id (the operation settled) or reservation id (the accept failed). */
  async releaseOperation(id: string): Promise<void> {
    if (this.schema.exists) this.operations().release(id, Date.now());
  }

  /** Adds one usage-ledger row's usage to the tenant's totals (forwarded by session objects). */
  async addUsage(usage: Usage): Promise<void> {
    if (this.schema.exists) this.operations().addUsage(usage);
  }

  async usageTotals(): Promise<Usage> {
    return this.schema.exists ? this.operations().usage() : zeroUsage();
  }

  // Webhooks (tenant-webhooks.ts, webhook-delivery.ts).

  /** Registers an endpoint; its signing secret is answered this once and stored only sealed. */
  async createWebhook(url: string, events: WebhookEventType[]): Promise<Wire<RpcResult<CreatedWebhook>>> {
    return asResult(async () => {
      const tenant = this.requireTenant();
      const id = `wh_${randomToken(12)}`;
      const secret = newWebhookSecret();
      const sealed = await sealWebhookSecret(this.env.SECRETS_KEY, tenant.id, id, secret);
      // The seal is awaited before the SQL turn: the tenant and the bound are read in the writing turn.
      this.requireTenant();
      return { ...this.webhooks().insert({ id, url, events, sealedSecret: sealed, createdAt: Date.now() }), secret };
    });
  }

  async listWebhooks(): Promise<Wire<RpcResult<{ items: WebhookEndpoint[] }>>> {
    return asResult(() => {
      this.requireTenant();
      return { items: this.webhooks().list() };
    });
  }

  async deleteWebhook(endpointId: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(() => {
      this.requireTenant();
      this.webhooks().delete(endpointId);
      return { deleted: true as const };
    });
  }

  async webhookDeliveries(endpointId: string, limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<WebhookDelivery>>>> {
    return asResult(() => {
      this.requireTenant();
      return this.webhooks().deliveries(endpointId, limit, cursor);
    });
  }

  private webhooks(): TenantWebhooks {
    return new TenantWebhooks(this.ctx.storage.sql);
  }

  private operations(): TenantOperations {
    return new TenantOperations(this.ctx.storage.sql);
  }

  private keys(): TenantKeys {
    return new TenantKeys(this.ctx.storage.sql);
  }

  // The session index: what a listing shows, so that a listing touches this object only.

  /** Idempotent (a retried creation refreshes the row); called before creation answers. */
  async registerSession(summary: SessionSummary): Promise<void> {
    if (this.schema.exists) new SessionIndex(this.ctx.storage.sql).register(summary);
  }

  async renameSession(sessionId: string, name: string | null): Promise<void> {
    if (this.schema.exists) new SessionIndex(this.ctx.storage.sql).rename(sessionId, name);
  }

  async unregisterSession(sessionId: string): Promise<void> {
    if (this.schema.exists) new SessionIndex(this.ctx.storage.sql).unregister(sessionId);
  }

  /** Sessions in creation order, a page at a time; the cursor is opaque to clients. */
  async listSessions(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<SessionSummary>>>> {
    return asResult(() => (this.schema.exists ? new SessionIndex(this.ctx.storage.sql).list(limit, cursor) : { items: [], nextCursor: null }));
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

  private tenant(): TenantInfo | undefined {
    if (!this.schema.exists) return undefined;
    const row = this.ctx.storage.sql.exec<TenantRow>("SELECT tenant_id, name, created_at FROM tenant WHERE singleton = 1").toArray()[0];
    return row ? { id: row.tenant_id, name: row.name, createdAt: row.created_at } : undefined;
  }

  private requireTenant(): TenantInfo {
    const tenant = this.tenant();
    if (!tenant) throw new RpcError({ code: "NotFound", message: "No such tenant" });
    return tenant;
  }
}

/** A failed part of the alarm is tried again after this long. */
const ALARM_RETRY_MS = 60_000;

function earliestOf(...times: (number | undefined)[]): number | undefined {
  const defined = times.filter((time): time is number => time !== undefined);
  return defined.length === 0 ? undefined : Math.min(...defined);
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

function randomToken(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
