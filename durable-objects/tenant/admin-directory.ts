import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import type { LazySchema } from "../sql/lazy-schema.ts";
import { TenantDirectory, type TenantSummary } from "./tenant-listings.ts";
import type { Page } from "./time-cursor.ts";

/** The directory (only on the object named "admin:directory"): the admin's list of tenants. */
export class AdminDirectory {
  constructor(
    private readonly schema: LazySchema,
    private readonly sql: SqlStorage,
  ) {}

  /** Idempotent; the admin's tenant creation proves the directory should exist. */
  async registerTenant(tenant: TenantSummary): Promise<void> {
    this.schema.create();
    new TenantDirectory(this.sql).register(tenant);
  }

  async listTenants(limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<TenantSummary>>>> {
    return asResult(() => (this.schema.exists ? new TenantDirectory(this.sql).list(limit, cursor) : { items: [], nextCursor: null }));
  }
}
