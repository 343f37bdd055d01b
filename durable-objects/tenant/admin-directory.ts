import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import type { LazySchema } from "../sql/lazy-schema.ts";
import { DirectoryLifecycle, type DirectoryStatus } from "./directory-lifecycle.ts";
import { TenantDirectory, type TenantSummary } from "./tenant-listings.ts";
import type { Page } from "./time-cursor.ts";

/** The directory (only on the object named "admin:directory"): the admin's list of tenants. */
export class AdminDirectory {
  constructor(
    private readonly schema: LazySchema,
    private readonly sql: SqlStorage,
  ) {}

  /**
   * Idempotent; the admin's tenant creation proves the directory should exist. With `retentionDays`
   * (the tenant object's own value), the directory's copy the cron sweeps by is set too, in the
   * same turn: a row healed after a failed creation, or missing when a retention was set, gets it.
   */
  async registerTenant(tenant: TenantSummary, retentionDays?: number | null): Promise<void> {
    this.schema.create();
    new TenantDirectory(this.sql).register(tenant);
    if (retentionDays !== undefined) new DirectoryLifecycle(this.sql).setRetention(tenant.id, retentionDays);
  }

  async listTenants(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<TenantSummary>>>> {
    return asResult(() => (this.schema.exists ? new TenantDirectory(this.sql).list(limit, cursor) : { items: [], nextCursor: null }));
  }

  /** Where a tenant id stands (directory-lifecycle.ts); undefined: never registered. */
  async directoryStatus(tenantId: string): Promise<DirectoryStatus | undefined> {
    return this.schema.exists ? new DirectoryLifecycle(this.sql).status(tenantId) : undefined;
  }

  /** The admin deleted the tenant ("deleting"), or its object finished ("deleted": the tombstone). */
  async markTenant(tenantId: string, status: "deleting" | "deleted"): Promise<void> {
    this.schema.create();
    new DirectoryLifecycle(this.sql).mark(tenantId, status, Date.now());
  }

  async takeTenantsDueForRetention(now: number, limit: number): Promise<string[]> {
    return this.schema.exists ? new DirectoryLifecycle(this.sql).takeDueForRetention(now, limit) : [];
  }
}
