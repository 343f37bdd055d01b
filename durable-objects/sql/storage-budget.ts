import type { ApiError } from "../../schema/errors.ts";

/**
 * What an object's SQLite stores before a client's write that grows it is refused, for sessions
 * and tenants alike. The platform refuses every write past 10 GB (SQLITE_FULL): a session's commit
 * that fails so faults it for good, and a full tenant object fails its key checks and quota leases
 * too. The room left keeps the work in flight, settlements and deletions going.
 */
export const STORAGE_BUDGET_BYTES = 8 * 1024 ** 3;

/** The refusal (422 LimitExceeded, `details.resource`) while `sql` is past the budget; undefined while there is room. */
export function storageRefusal(sql: SqlStorage, resource: "sessionStorage" | "tenantStorage", advice: string): ApiError | undefined {
  const bytes = sql.databaseSize;
  if (bytes <= STORAGE_BUDGET_BYTES) return undefined;
  const owner = resource === "sessionStorage" ? "session" : "tenant";
  return {
    code: "LimitExceeded",
    message: `The ${owner}'s storage is full (${bytes} of ${STORAGE_BUDGET_BYTES} bytes): ${advice}`,
    details: { resource, bytes, limit: STORAGE_BUDGET_BYTES },
  };
}
