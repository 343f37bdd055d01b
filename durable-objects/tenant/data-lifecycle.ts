import type { DeleteSessionsAnswer, TenantDetail } from "../../schema/data-lifecycle.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import { removeSessionObjects } from "../session/session-removal.ts";
import type { AlarmDeletions, TenantHost } from "./tenant-host.ts";
import { SessionDeletions } from "./session-deletions.ts";

/** Sessions one alarm tick deletes at most (all at once): a tick's cost is bounded, whatever the queue. */
export const DELETIONS_PER_TICK = 25;
/** A tick whose whole batch failed is repeated after this long (failed sessions stay queued, at its back). */
const DELETION_RETRY_MS = 10_000;
/**
 * A deleted tenant's own data goes no earlier than this after its deletion began: three times the
 * time another isolate may still trust one of its keys (worker/middleware/verified-keys.ts
 * KEY_TRUST_MS, 5 s), so a session created by a request that presented a key just before is
 * indexed, queued and deleted too, never left behind without its index.
 */
export const TENANT_DELETION_GRACE_MS = 15_000;
const DAY_MS = 86_400_000;

/**
 * The data lifecycle of a tenant (API.md "Data lifecycle"; docs/data.md "Deleting data"): sessions deleted in
 * the background by metadata, by retention or with the whole tenant, through one durable queue
 * (session-deletions.ts) that the one alarm empties a bounded batch per tick. A queued session is
 * hidden from listings at once and leaves the queue with its index row, after its object and its
 * shard rows (session/session-removal.ts): a tick that dies part-way loses nothing, and what it
 * repeats is idempotent. A tenant's deletion revokes its keys at once (so its browser tokens and
 * sockets go too: tenant-watches.ts), queues every session, and once they are gone leaves a
 * tombstone in the admin directory and deletes all of its own storage.
 */
export class DataLifecycle implements AlarmDeletions {
  constructor(private readonly host: TenantHost) {}

  /** `DELETE /v1/sessions?metadata.…`: the matching sessions are queued; the alarm deletes them. */
  async deleteSessionsByMetadata(pairs: [string, string][]): Promise<Wire<RpcResult<DeleteSessionsAnswer>>> {
    return asResult(async () => {
      this.host.requireActiveTenant();
      const now = Date.now();
      const { listed, queued } = this.deletions().queueMatching(pairs, now);
      if (queued > 0) await this.host.armNoLaterThan(now);
      return { matched: listed };
    });
  }

  /**
   * `DELETE /v1/admin/tenants/{id}`: marks the tenant deleting, revokes every key and queues every
   * session in one transaction (a repeat changes nothing), closes a batch of the keys' sockets now,
   * and arms the alarm for the rest.
   */
  async deleteTenant(): Promise<Wire<RpcResult<TenantDetail>>> {
    return asResult(async () => {
      this.host.requireTenant();
      const now = Date.now();
      if (!this.host.deletion()) {
        this.host.ctx.storage.transactionSync(() => {
          this.host.sql.exec("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?)", now);
          this.deletions().queueAll(now);
          this.host.sql.exec("UPDATE tenant SET deleting_at = ?, deletion_done = 0 WHERE singleton = 1", now);
        });
      }
      await this.host.watches().closeRevoked(now).catch(() => undefined);
      await this.host.armNoLaterThan(now);
      return this.detailNow();
    });
  }

  /** `GET /v1/admin/tenants/{id}`: the tenant with its deletion's progress, if one began. */
  async tenantDetail(): Promise<Wire<RpcResult<TenantDetail>>> {
    return asResult(() => this.detailNow());
  }

  /**
   * The cron's retention sweep of this tenant (worker/retention-sweep.ts): sessions idle longer
   * than `sessionRetentionDays` are queued (one SQL statement), and a first batch is deleted now;
   * the alarm deletes the rest.
   */
  async sweepRetention(now: number): Promise<{ queued: number }> {
    if (!this.host.tenant() || this.host.deletion()) return { queued: 0 };
    const days = this.host.quotas().sessionRetentionDays;
    if (days === null) return { queued: 0 };
    const queued = this.deletions().queueIdle(now - days * DAY_MS, now, this.host.operations().sessionsWithOpenOperations());
    if (this.deletions().remaining() > 0) {
      const next = await this.tick(now).catch(() => now + DELETION_RETRY_MS);
      if (typeof next === "number") await this.host.armNoLaterThan(next);
    }
    return { queued };
  }

  async tick(now: number): Promise<number | undefined | "finished"> {
    const tenant = this.host.tenant();
    if (!tenant) return undefined;
    const deletions = this.deletions();
    const batch = deletions.next(DELETIONS_PER_TICK);
    let deleted = 0;
    if (batch.length > 0) {
      // Each object is asked to delete the session the index names (a session created again under
      // the id meanwhile is another's, and stays).
      const outcomes = await Promise.allSettled(batch.map(({ sessionId, createdAt, retention }) => removeSessionObjects(this.host.env, tenant.id, sessionId, createdAt, retention)));
      const deleting = this.host.deletion() !== undefined;
      this.host.ctx.storage.transactionSync(() => {
        batch.forEach(({ sessionId }, index) => {
          const outcome = outcomes[index];
          if (outcome?.status !== "fulfilled") return deletions.postpone(sessionId);
          // Not idle after all (an operation open that the index did not know of): kept.
          if (outcome.value.busy) return deletions.keep(sessionId);
          deleted++;
          // Left as it was: another creation holds the object; its own queue row, if any, decides.
          if (outcome.value.another) return;
          // Counted once: a tick running beside this one (retention's, the alarm's) may have taken it.
          if (deletions.finished(sessionId, outcome.value.createdAt) && deleting) this.host.sql.exec("UPDATE tenant SET deletion_done = deletion_done + 1 WHERE singleton = 1");
        });
      });
    }
    // A batch that deleted nothing (every session unreachable) waits before the next try.
    if (deletions.remaining() > 0) return deleted === 0 ? now + DELETION_RETRY_MS : Date.now();
    const deletion = this.host.deletion();
    if (!deletion) return undefined;
    const finalAt = deletion.startedAt + TENANT_DELETION_GRACE_MS;
    return Date.now() < finalAt ? finalAt : "finished";
  }

  /**
   * The tombstone first (the id stays reserved even if what follows fails, and the alarm repeats
   * it), then every row and the alarm; nothing answers for the tenant from then on (404). A
   * session registered while the tombstone was written (a request whose key was checked before)
   * is in the queue again: the rows wait for the alarm's next batch rather than forget it.
   */
  async finish(): Promise<void> {
    const tenant = this.host.tenant();
    if (!tenant) return;
    await this.host.env.TENANTS.getByName("admin:directory").markTenant(tenant.id, "deleted");
    await this.host.ctx.blockConcurrencyWhile(async () => {
      if (this.deletions().remaining() > 0) return this.host.ctx.storage.setAlarm(Date.now());
      await this.host.ctx.storage.deleteAlarm();
      await this.host.ctx.storage.deleteAll();
      this.host.schema.forget();
    });
  }

  private detailNow(): TenantDetail {
    const tenant = this.host.requireTenant();
    const deletion = this.host.deletion();
    if (!deletion) return { ...tenant, status: "active" };
    const remaining = this.deletions().remaining();
    return {
      ...tenant,
      status: "deleting",
      deletion: { startedAt: deletion.startedAt, sessionsTotal: deletion.sessionsDeleted + remaining, sessionsDeleted: deletion.sessionsDeleted, sessionsRemaining: remaining },
    };
  }

  private deletions(): SessionDeletions {
    return new SessionDeletions(this.host.sql);
  }
}
