/** A tenant's place in the directory: listed, being deleted, or a tombstone keeping its id reserved. */
export type DirectoryStatus = "active" | "deleting" | "deleted";

/** How often the cron asks one tenant with a retention to sweep its idle sessions. */
export const RETENTION_SWEEP_INTERVAL_MS = 60 * 60_000;

/**
 * The admin directory's part in the data lifecycle (its table: tenant-listings.ts TenantDirectory):
 * a tenant's deletion status, kept after the tenant's own object deleted everything (the tombstone
 * that keeps a deleted tenant's id reserved: a new tenant never meets the old one's objects), and
 * which tenants have a retention and when each was last swept, so the minute cron asks only the
 * tenants due (worker/retention-sweep.ts). Every method is one synchronous SQL turn.
 */
export class DirectoryLifecycle {
  constructor(private readonly sql: SqlStorage) {}

  status(tenantId: string): DirectoryStatus | undefined {
    return this.sql.exec<{ status: DirectoryStatus }>("SELECT status FROM tenant_directory WHERE tenant_id = ?", tenantId).toArray()[0]?.status;
  }

  /** Idempotent; never turns a tombstone back. A tenant missing from the directory gets its row here. */
  mark(tenantId: string, status: "deleting" | "deleted", now: number): void {
    this.sql.exec(
      `INSERT INTO tenant_directory (tenant_id, name, created_at, status) VALUES (?, ?, ?, ?)
       ON CONFLICT (tenant_id) DO UPDATE SET status = excluded.status, retention_days = NULL WHERE tenant_directory.status != 'deleted'`,
      tenantId,
      tenantId,
      now,
      status,
    );
  }

  setRetention(tenantId: string, days: number | null): void {
    this.sql.exec("UPDATE tenant_directory SET retention_days = ? WHERE tenant_id = ? AND status = 'active'", days, tenantId);
  }

  /**
   * Up to `limit` tenants whose retention sweep is due (never swept, or not for an interval),
   * oldest sweep first, each marked swept now: an overlapping tick does not take them too, and a
   * failed sweep is tried again an interval later.
   */
  takeDueForRetention(now: number, limit: number): string[] {
    const rows = this.sql
      .exec<{ tenant_id: string }>(
        `SELECT tenant_id FROM tenant_directory INDEXED BY tenant_directory_retention
         WHERE retention_days IS NOT NULL AND coalesce(retention_swept_at, 0) <= ? ORDER BY retention_swept_at LIMIT ?`,
        now - RETENTION_SWEEP_INTERVAL_MS,
        limit,
      )
      .toArray();
    for (const row of rows) this.sql.exec("UPDATE tenant_directory SET retention_swept_at = ? WHERE tenant_id = ?", now, row.tenant_id);
    return rows.map((row) => row.tenant_id);
  }
}
