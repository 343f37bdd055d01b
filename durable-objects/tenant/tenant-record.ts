import type { RpcResult } from "../../schema/errors.ts";
import type { TenantQuotas } from "../../schema/api.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult, RpcError } from "../rpc/rpc-errors.ts";
import type { TenantHost, TenantInfo } from "./tenant-host.ts";

/**
 * The tenant record the admin creates and reads (its creation is what creates the object's schema),
 * and the quotas it holds (requests per minute; open operations: tenant-operations.ts; schedules: schedule-claims.ts;
 * whether the deployment's provider keys may be used).
 */
export class TenantRecord {
  constructor(private readonly host: TenantHost) {}

  async createTenant(id: string, name: string): Promise<Wire<RpcResult<TenantInfo>>> {
    return asResult(() => {
      const existing = this.host.tenant();
      if (existing) throw new RpcError({ code: "TenantExists", message: `Tenant ${id} already exists`, details: { createdAt: existing.createdAt, name: existing.name } });
      this.host.schema.create();
      const createdAt = Date.now();
      this.host.sql.exec("INSERT INTO tenant (singleton, tenant_id, name, created_at) VALUES (1, ?, ?, ?)", id, name, createdAt);
      return { id, name, createdAt };
    });
  }

  async info(): Promise<Wire<RpcResult<TenantInfo>>> {
    return asResult(() => this.host.requireTenant());
  }

  async getQuotas(): Promise<Wire<RpcResult<TenantQuotas>>> {
    return asResult(() => {
      this.host.requireTenant();
      return this.host.quotas();
    });
  }

  async setQuotas(quotas: Partial<TenantQuotas>): Promise<Wire<RpcResult<TenantQuotas>>> {
    return asResult(() => {
      this.host.requireActiveTenant();
      if (quotas.sessionRetentionDays !== undefined) {
        this.host.sql.exec("UPDATE tenant SET session_retention_days = ? WHERE singleton = 1", quotas.sessionRetentionDays);
      }
      if (quotas.requestsPerMinute !== undefined) {
        this.host.sql.exec("UPDATE tenant SET requests_per_minute = ? WHERE singleton = 1", quotas.requestsPerMinute);
      }
      if (quotas.maxOpenOperations !== undefined) {
        this.host.sql.exec("UPDATE tenant SET max_open_operations = ? WHERE singleton = 1", quotas.maxOpenOperations);
      }
      if (quotas.maxSchedules !== undefined) {
        this.host.sql.exec("UPDATE tenant SET max_schedules = ? WHERE singleton = 1", quotas.maxSchedules);
      }
      if (quotas.deploymentKeys !== undefined) {
        this.host.sql.exec("UPDATE tenant SET deployment_keys = ? WHERE singleton = 1", quotas.deploymentKeys ? 1 : 0);
      }
      return this.host.quotas();
    });
  }
}
