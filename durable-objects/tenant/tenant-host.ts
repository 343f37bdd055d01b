import type { TenantQuotas } from "../../schema/api.ts";
import type { ApiError } from "../../schema/errors.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { storageRefusal } from "../sql/storage-budget.ts";
import { LazySchema } from "../sql/lazy-schema.ts";
import { TENANT_MIGRATIONS } from "./tenant-migrations.ts";
import { TenantKeys } from "./tenant-keys.ts";
import { DEFAULT_MAX_OPEN_OPERATIONS, TenantOperations } from "./tenant-operations.ts";
import { PendingReservations } from "./pending-reservations.ts";
import { DEFAULT_MAX_SCHEDULES } from "./schedule-claims.ts";
import { RequestWindow } from "./request-window.ts";
import { TenantWatches } from "./tenant-watches.ts";
import { TenantWebhooks } from "./webhooks/tenant-webhooks.ts";
import { WebhookEventIds } from "./webhooks/webhook-event-ids.ts";
import { deliverDue } from "./webhooks/webhook-delivery.ts";

/** When the tenant's deletion began and how many of its sessions it deleted since. */
export interface TenantDeletionMark {
  startedAt: number;
  sessionsDeleted: number;
}

/** The background deletions' part of the one alarm (data-lifecycle.ts). */
export interface AlarmDeletions {
  /** One bounded batch; when the alarm is wanted next, or "finished": the tenant's own data is to go. */
  tick(now: number): Promise<number | undefined | "finished">;
  /** The tenant's deletion ends: its directory tombstone, then all of its storage. */
  finish(): Promise<void>;
}

export interface TenantInfo {
  id: string;
  name: string;
  createdAt: number;
}

/** Requests per minute a tenant may make when no quota of its own is set. */
export const DEFAULT_REQUESTS_PER_MINUTE = 1200;

type TenantRow = { tenant_id: string; name: string; created_at: number };

/**
 * What the TenantObject's capabilities share (ARCHITECTURE D2, D17): the object's storage and
 * environment, its lazily created schema (sql/lazy-schema.ts: a request naming a tenant that does
 * not exist writes nothing), the state it holds in memory (the per-minute request window, the
 * reservations of accepts in flight), the tenant record, the stores over its tables, and the one
 * alarm the watch revocations and the webhook deliveries share. A plain class: the object
 * (tenant-object.ts) creates it and hands it to each capability.
 */
export class TenantHost {
  readonly sql: SqlStorage;
  readonly schema: LazySchema;
  /** Open-operation slots of accepts in flight, in memory until bound (pending-reservations.ts). */
  private readonly pendingReservations = new PendingReservations();
  readonly requestWindow: RequestWindow;

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
  ) {
    this.sql = ctx.storage.sql;
    this.schema = new LazySchema(ctx.storage, TENANT_MIGRATIONS);
    this.requestWindow = new RequestWindow(this.sql);
  }

  /**
   * The one alarm, shared: it continues closing revoked keys' watch sockets (past a batch or after
   * a failed notification), sends due webhook deliveries and deletes a batch of queued sessions. Both are driven by their tables, so
   * each run recomputes when it is wanted next and arms that, last (a failing part never leaves
   * the other unscheduled), never later than the alarm already is: those times were read before
   * the parts' awaits, during which other calls may have armed it for their own work (a
   * settlement's delivery due now, a revoked key, a queued deletion).
   */
  async alarm(deletions: AlarmDeletions): Promise<void> {
    const tenant = this.tenant();
    if (!tenant) return;
    const now = Date.now();
    const [watches, deliveries, deleted] = await Promise.all([
      this.watches().closeRevoked(now).catch(() => now + ALARM_RETRY_MS),
      deliverDue(this.webhooks(), { tenantId: tenant.id, secretsKey: this.env.SECRETS_KEY, allowLoopback: this.env.LOCAL_DEV === "on" }, now).catch(() => now + ALARM_RETRY_MS),
      deletions.tick(now).catch(() => now + ALARM_RETRY_MS),
    ]);
    // Last, once the other parts are done: it deletes the alarm with everything else.
    if (deleted === "finished") return deletions.finish();
    await this.armNoLaterThan(earliestOf(watches, deliveries, deleted));
  }

  /**
   * Make sure the alarm fires by `at` without postponing an earlier one. Inside the alarm handler
   * getAlarm() is null until something sets the alarm again (the platform's rule), so the run's
   * own time is armed unless a call made during the run armed an earlier one.
   */
  async armNoLaterThan(at: number | undefined): Promise<void> {
    if (at === undefined) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(at);
  }

  watches(): TenantWatches {
    return new TenantWatches(this.sql, (sessionId, keyId) => {
      const tenant = this.requireTenant();
      // The session object's name (ARCHITECTURE D2), as the front worker derives it.
      return this.env.SESSIONS.getByName(`${tenant.id}:${sessionId}`).closeWatchesOfKey(keyId);
    });
  }

  webhooks(): TenantWebhooks {
    return new TenantWebhooks(this.sql);
  }

  eventIds(): WebhookEventIds {
    return new WebhookEventIds(this.sql);
  }

  operations(): TenantOperations {
    return new TenantOperations(this.sql, this.pendingReservations);
  }

  keys(): TenantKeys {
    return new TenantKeys(this.sql);
  }

  tenant(): TenantInfo | undefined {
    if (!this.schema.exists) return undefined;
    const row = this.sql.exec<TenantRow>("SELECT tenant_id, name, created_at FROM tenant WHERE singleton = 1").toArray()[0];
    return row ? { id: row.tenant_id, name: row.name, createdAt: row.created_at } : undefined;
  }

  requireTenant(): TenantInfo {
    const tenant = this.tenant();
    if (!tenant) throw new RpcError({ code: "NotFound", message: "No such tenant" });
    return tenant;
  }

  quotas(): TenantQuotas {
    const row = this.sql
      .exec<{ requests_per_minute: number | null; max_open_operations: number | null; max_schedules: number | null; deployment_keys: number | null; session_retention_days: number | null }>(
        "SELECT requests_per_minute, max_open_operations, max_schedules, deployment_keys, session_retention_days FROM tenant WHERE singleton = 1",
      )
      .toArray()[0];
    return {
      requestsPerMinute: row?.requests_per_minute ?? DEFAULT_REQUESTS_PER_MINUTE,
      maxOpenOperations: row?.max_open_operations ?? DEFAULT_MAX_OPEN_OPERATIONS,
      maxSchedules: row?.max_schedules ?? DEFAULT_MAX_SCHEDULES,
      deploymentKeys: row?.deployment_keys !== 0,
      sessionRetentionDays: row?.session_retention_days ?? null,
    };
  }

  /** The tenant's deletion, once `DELETE /v1/admin/tenants/{id}` began it (data-lifecycle.ts). */
  deletion(): TenantDeletionMark | undefined {
    if (!this.schema.exists) return undefined;
    const row = this.sql.exec<{ deleting_at: number | null; deletion_done: number }>("SELECT deleting_at, deletion_done FROM tenant WHERE singleton = 1").toArray()[0];
    return row?.deleting_at == null ? undefined : { startedAt: row.deleting_at, sessionsDeleted: row.deletion_done };
  }

  /**
   * The refusal of what would grow the tenant object past its storage budget (new agents and
   * versions, tools, MCP servers, webhooks, sessions in its index: sql/storage-budget.ts);
   * undefined while there is room.
   */
  storageRefusal(): ApiError | undefined {
    return storageRefusal(this.sql, "tenantStorage", "delete agents, tools, MCP servers or sessions it no longer needs");
  }

  /** Throws the storage refusal (422 LimitExceeded) while there is one. */
  assertStorageRoom(): void {
    const refusal = this.storageRefusal();
    if (refusal) throw new RpcError(refusal);
  }

  /** The tenant, unless it is being deleted: nothing new is created for a tenant being deleted. */
  requireActiveTenant(): TenantInfo {
    const tenant = this.requireTenant();
    if (this.deletion()) throw new RpcError({ code: "TenantDeleting", message: `Tenant ${tenant.id} is being deleted` });
    return tenant;
  }
}

/** A failed part of the alarm is tried again after this long. */
const ALARM_RETRY_MS = 60_000;

function earliestOf(...times: (number | undefined)[]): number | undefined {
  const defined = times.filter((time): time is number => time !== undefined);
  return defined.length === 0 ? undefined : Math.min(...defined);
}

export function randomToken(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
