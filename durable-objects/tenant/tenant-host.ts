import { DurableObject } from "cloudflare:workers";
import { RpcError } from "../rpc/rpc-errors.ts";
import { LazySchema } from "../sql/lazy-schema.ts";
import { TENANT_MIGRATIONS } from "./tenant-migrations.ts";
import { TenantKeys } from "./tenant-keys.ts";
import { TenantOperations } from "./tenant-operations.ts";
import { PendingReservations } from "./pending-reservations.ts";
import { TenantWatches } from "./tenant-watches.ts";
import { TenantWebhooks } from "./webhooks/tenant-webhooks.ts";
import { WebhookEventIds } from "./webhooks/webhook-event-ids.ts";
import { deliverDue } from "./webhooks/webhook-delivery.ts";

export interface TenantInfo {
  id: string;
  name: string;
  createdAt: number;
}

type TenantRow = { tenant_id: string; name: string; created_at: number };

/**
 * The hosting half of the TenantObject (ARCHITECTURE D2, D17): its lazily created schema
 * (sql/lazy-schema.ts: a request naming a tenant that does not exist writes nothing), the tenant
 * record, the stores over its tables, and the one alarm the watch revocations and the webhook
 * deliveries share. The RPC surface is layered on top (tenant-activity-rpc.ts, tenant-object.ts).
 */
export abstract class TenantHost extends DurableObject<Env> {
  protected readonly schema: LazySchema;
  /** Open-operation slots of accepts in flight, in memory until bound (pending-reservations.ts). */
  private readonly pendingReservations = new PendingReservations();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.schema = new LazySchema(ctx.storage, TENANT_MIGRATIONS);
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
  protected async armNoLaterThan(at: number | undefined): Promise<void> {
    if (at === undefined) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(at);
  }

  protected watches(): TenantWatches {
    return new TenantWatches(this.ctx.storage.sql, (sessionId, keyId) => {
      const tenant = this.requireTenant();
      // The session object's name (ARCHITECTURE D2), as the front worker derives it.
      return this.env.SESSIONS.getByName(`${tenant.id}:${sessionId}`).closeWatchesOfKey(keyId);
    });
  }

  protected webhooks(): TenantWebhooks {
    return new TenantWebhooks(this.ctx.storage.sql);
  }

  protected eventIds(): WebhookEventIds {
    return new WebhookEventIds(this.ctx.storage.sql);
  }

  protected operations(): TenantOperations {
    return new TenantOperations(this.ctx.storage.sql, this.pendingReservations);
  }

  protected keys(): TenantKeys {
    return new TenantKeys(this.ctx.storage.sql);
  }

  protected tenant(): TenantInfo | undefined {
    if (!this.schema.exists) return undefined;
    const row = this.ctx.storage.sql.exec<TenantRow>("SELECT tenant_id, name, created_at FROM tenant WHERE singleton = 1").toArray()[0];
    return row ? { id: row.tenant_id, name: row.name, createdAt: row.created_at } : undefined;
  }

  protected requireTenant(): TenantInfo {
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

export function randomToken(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
