import type { RpcResult } from "../../schema/errors.ts";
import { toWire, type Wire } from "../../schema/wire.ts";
import { storageRefusal } from "../sql/storage-budget.ts";

/**
 * Runs a client's write that grows the session, or answers its refusal while the object is past
 * its storage budget (sql/storage-budget.ts; nothing is written). `work`'s own answer type is
 * kept, a `null` included.
 */
export function growing<T>(sql: SqlStorage, work: () => Promise<Wire<RpcResult<T>>>): Promise<Wire<RpcResult<T>>>;
export function growing<T>(sql: SqlStorage, work: () => Promise<Wire<RpcResult<T>> | null>): Promise<Wire<RpcResult<T>> | null>;
export function growing<T>(sql: SqlStorage, work: () => Promise<Wire<RpcResult<T>> | null>): Promise<Wire<RpcResult<T>> | null> {
  const refusal = storageRefusal(sql, "sessionStorage", "it takes no more entries, values, list items or runs; export it, or delete what it no longer needs");
  if (refusal === undefined) return work();
  const refused: RpcResult<T> = { ok: false, error: refusal };
  return Promise.resolve(toWire(refused));
}
