import type { ApiError, RpcResult } from "../../schema/errors.ts";
import { toWire, type Wire } from "../../schema/wire.ts";

/**
 * What a session's object stores before a client's write that grows it is refused. The platform
 * refuses every write past 10 GB (SQLITE_FULL), and a commit that fails so faults the session for
 * good: the room left keeps the runs in flight, settlements and deletions going.
 */
export const SESSION_STORAGE_BUDGET_BYTES = 8 * 1024 ** 3;

/** The refusal (422 LimitExceeded, `resource: "sessionStorage"`) while the object is past its budget. */
export function storageRefusal(sql: SqlStorage): ApiError | undefined {
  const bytes = sql.databaseSize;
  if (bytes <= SESSION_STORAGE_BUDGET_BYTES) return undefined;
  return {
    code: "LimitExceeded",
    message: `The session's storage is full (${bytes} of ${SESSION_STORAGE_BUDGET_BYTES} bytes): it takes no more entries, values, list items or runs; export it, or delete what it no longer needs`,
    details: { resource: "sessionStorage", bytes, limit: SESSION_STORAGE_BUDGET_BYTES },
  };
}

/**
 * Runs a client's write that grows the session, or answers its refusal while the object is past
 * its budget (nothing is written). `work`'s own answer type is kept, a `null` included.
 */
export function growing<T>(sql: SqlStorage, work: () => Promise<Wire<RpcResult<T>>>): Promise<Wire<RpcResult<T>>>;
export function growing<T>(sql: SqlStorage, work: () => Promise<Wire<RpcResult<T>> | null>): Promise<Wire<RpcResult<T>> | null>;
export function growing<T>(sql: SqlStorage, work: () => Promise<Wire<RpcResult<T>> | null>): Promise<Wire<RpcResult<T>> | null> {
  const refusal = storageRefusal(sql);
  if (refusal === undefined) return work();
  const refused: RpcResult<T> = { ok: false, error: refusal };
  return Promise.resolve(toWire(refused));
}
