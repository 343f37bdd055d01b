import { DurableObject } from "cloudflare:workers";
import type { RpcResult } from "../schema/errors.ts";
import type { Usage } from "../schema/usage.ts";
import type { Wire } from "../schema/wire.ts";
import { IdempotencyStore, type IdempotencyClaim } from "./idempotency.ts";
import { asResult, RpcError } from "./rpc-errors.ts";
import { migrate } from "./sql/migrations.ts";
import { TENANT_MIGRATIONS } from "./sql/tenant-migrations.ts";
import { DEFAULT_MAX_OPEN_OPERATIONS, TenantOperations, type Reservation } from "./tenant-operations.ts";
import { TenantWatches } from "./tenant-watches.ts";

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
}

export type Authorization = { keyId: string; limited: false } | { keyId: string; limited: true; retryAfterSeconds: number };

export interface SessionPage {
  items: { sessionId: string; createdAt: number }[];
  nextCursor: string | null;
}

type TenantRow = { tenant_id: string; name: string; created_at: number };
type KeyRow = { key_id: string; hash: string; revoked_at: number | null };
type SessionRow = { session_id: string; created_at: number };

const encoder = new TextEncoder();

/**
 * One per tenant (ARCHITECTURE D2, D17): the tenant record, SHA-256 hashes of its API keys with
 * immediate revocation, the index of its sessions for listing, its quotas (requests per minute,
 * open operations: tenant-operations.ts) and its usage totals. Keys are minted here and shown
 * once; only their hashes are stored.
 */
export class TenantObject extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, TENANT_MIGRATIONS);
  }

  async createTenant(id: string, name: string): Promise<Wire<RpcResult<TenantInfo>>> {
    return asResult(() => {
      if (this.tenant()) throw new RpcError({ code: "TenantExists", message: `Tenant ${id} already exists` });
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
      this.ctx.storage.sql.exec("INSERT INTO api_keys (key_id, hash, name, created_at) VALUES (?, ?, ?, ?)", keyId, hash, name, Date.now());
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
      const row = this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM api_keys WHERE key_id = ?", keyId).one();
      if (row.n === 0) throw new RpcError({ code: "NotFound", message: `Key ${keyId} does not exist` });
      this.ctx.storage.sql.exec("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE key_id = ?", Date.now(), keyId);
      await this.watches().closeRevoked(Date.now());
      return { revoked: true };
    });
  }

  /** A session accepted a watch socket opened with `keyId` (tenant-watches.ts); inactive: the key is revoked. */
  async registerWatch(keyId: string, sessionId: string): Promise<{ active: boolean }> {
    return this.watches().register(keyId, sessionId, Date.now());
  }

  /** Continues closing revoked keys' watch sockets past a batch or after a failed notification. */
  override async alarm(): Promise<void> {
    await this.watches().closeRevoked(Date.now());
  }

  private watches(): TenantWatches {
    return new TenantWatches(this.ctx.storage.sql, this.ctx.storage, (sessionId, keyId) => {
      const tenant = this.requireTenant();
      // The session object's name (ARCHITECTURE D2), as the front worker derives it.
      return this.env.SESSIONS.getByName(`${tenant.id}:${sessionId}`).closeWatchesOfKey(keyId);
    });
  }

  /** The key id for a presented key's hash, or null (unknown or revoked), compared in constant time. */
  async verifyKey(hash: string): Promise<{ keyId: string } | null> {
    return this.matchKey(hash);
  }

  /**
   * Authenticates a request and counts it against the tenant's per-minute quota in one
   * synchronous turn (no await between the count's read and its write). Null: not authenticated.
   */
  async authorize(hash: string, now = Date.now()): Promise<Authorization | null> {
    const key = this.matchKey(hash);
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
      return this.quotas();
    });
  }

  private quotas(): TenantQuotas {
    const row = this.ctx.storage.sql
      .exec<{ requests_per_minute: number | null; max_open_operations: number | null }>("SELECT requests_per_minute, max_open_operations FROM tenant WHERE singleton = 1")
      .toArray()[0];
    return {
      requestsPerMinute: row?.requests_per_minute ?? DEFAULT_REQUESTS_PER_MINUTE,
      maxOpenOperations: row?.max_open_operations ?? DEFAULT_MAX_OPEN_OPERATIONS,
    };
  }

  /**
   * Takes a slot of the open-operations quota for an accept about to be made on `sessionId`/`lane`,
   * in one synchronous turn (D5): expired unbound reservations are dropped, the rest counted.
   */
  async reserveOperation(sessionId: string, lane: string, now = Date.now()): Promise<Reservation> {
    return this.operations().reserve(sessionId, lane, this.quotas().maxOpenOperations, now);
  }

  /** The accept succeeded: the reservation's slot now belongs to `operationId`. */
  async bindOperation(reservationId: string, operationId: string): Promise<void> {
    this.operations().bind(reservationId, operationId, Date.now());
  }

  /** Frees a slot by operation id (the operation settled) or reservation id (the accept failed). */
  async releaseOperation(id: string): Promise<void> {
    this.operations().release(id, Date.now());
  }

  /** Adds one usage-ledger row's usage to the tenant's totals (forwarded by session objects). */
  async addUsage(usage: Usage): Promise<void> {
    this.operations().addUsage(usage);
  }

  async usageTotals(): Promise<Usage> {
    return this.operations().usage();
  }

  private operations(): TenantOperations {
    return new TenantOperations(this.ctx.storage.sql);
  }

  private matchKey(hash: string): { keyId: string } | null {
    const row = this.ctx.storage.sql.exec<KeyRow>("SELECT key_id, hash, revoked_at FROM api_keys WHERE hash = ?", hash).toArray()[0];
    if (!row || row.revoked_at !== null) return null;
    const a = encoder.encode(row.hash);
    const b = encoder.encode(hash);
    return a.byteLength === b.byteLength && crypto.subtle.timingSafeEqual(a, b) ? { keyId: row.key_id } : null;
  }

  /** Idempotent: the session index lists what the tenant created. */
  async registerSession(sessionId: string, createdAt: number): Promise<void> {
    this.ctx.storage.sql.exec("INSERT INTO sessions (session_id, created_at) VALUES (?, ?) ON CONFLICT (session_id) DO NOTHING", sessionId, createdAt);
  }

  async unregisterSession(sessionId: string): Promise<void> {
    this.ctx.storage.sql.exec("DELETE FROM sessions WHERE session_id = ?", sessionId);
  }

  /** Sessions in creation order, a page at a time; the cursor is opaque to clients. */
  async listSessions(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<SessionPage>>> {
    return asResult(() => {
      const after = decodeCursor(cursor);
      const rows = this.ctx.storage.sql
        .exec<SessionRow>(
          `SELECT session_id, created_at FROM sessions
           WHERE (created_at, session_id) > (?, ?) ORDER BY created_at, session_id LIMIT ?`,
          after.createdAt,
          after.sessionId,
          limit + 1,
        )
        .toArray();
      const items = rows.slice(0, limit).map((row) => ({ sessionId: row.session_id, createdAt: row.created_at }));
      const last = items[items.length - 1];
      return { items, nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.sessionId) : null };
    });
  }

  /** D15: claim an Idempotency-Key for a creating POST this object owns. */
  async idempotencyClaim(key: string, requestHash: string): Promise<IdempotencyClaim> {
    return new IdempotencyStore(this.ctx.storage.sql).claim(key, requestHash);
  }

  async idempotencyComplete(key: string, requestHash: string, status: number, body: string): Promise<void> {
    new IdempotencyStore(this.ctx.storage.sql).complete(key, requestHash, status, body);
  }

  private tenant(): TenantInfo | undefined {
    const row = this.ctx.storage.sql.exec<TenantRow>("SELECT tenant_id, name, created_at FROM tenant WHERE singleton = 1").toArray()[0];
    return row ? { id: row.tenant_id, name: row.name, createdAt: row.created_at } : undefined;
  }

  private requireTenant(): TenantInfo {
    const tenant = this.tenant();
    if (!tenant) throw new RpcError({ code: "NotFound", message: "No such tenant" });
    return tenant;
  }
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

function randomToken(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function encodeCursor(createdAt: number, sessionId: string): string {
  return btoa(JSON.stringify([createdAt, sessionId])).replace(/=+$/, "");
}

function decodeCursor(cursor: string | undefined): { createdAt: number; sessionId: string } {
  if (cursor === undefined) return { createdAt: -1, sessionId: "" };
  try {
    const [createdAt, sessionId]: unknown[] = JSON.parse(atob(cursor));
    if (typeof createdAt === "number" && typeof sessionId === "string") return { createdAt, sessionId };
  } catch {
    // fall through
  }
  throw new RpcError({ code: "ValidationFailed", message: "Invalid cursor" });
}
