import { fromWire } from "../../schema/wire.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { shardOf } from "./due-work/deferred-registrations.ts";

/**
 * Deletes a session's object storage and then its rows elsewhere that name it (its suspended runs
 * and its schedules in its DeferredIndex shard), for `DELETE /v1/sessions/{sid}` and for the tenant's background
 * deletions (tenant/session-deletions.ts). The tenant's index row is its caller's to remove, last:
 * every step is idempotent, so a retry after a failure part-way (the storage gone, a shard not
 * reached) repeats what is left and deletes nothing twice that matters. `deleted`: whether the
 * object still held a session; `createdAt`: that session's creation time, which the caller passes
 * on to the index so that a session created again under the id meanwhile keeps its row. With
 * `expectedCreatedAt` (a queued deletion's), only that creation is deleted; `another`: the object
 * holds another one, left as it is.
 */
export async function removeSessionObjects(
  env: Env,
  tenantId: string,
  sessionId: string,
  expectedCreatedAt?: number,
  /** Retention's: a session with an operation open is not idle, and stays (`busy`). */
  onlyIfIdle = false,
): Promise<{ deleted: boolean; createdAt?: number; another?: true; busy?: true }> {
  const name = `${tenantId}:${sessionId}`;
  const reply = fromWire(await env.SESSIONS.getByName(name).deleteSession(expectedCreatedAt, onlyIfIdle));
  if (!reply.ok) throw new RpcError(reply.error);
  if (reply.value.busy) return reply.value;
  // Another creation of the id holds the object now (`another`): it, and its shard rows, stay.
  if (!reply.value.deleted && expectedCreatedAt !== undefined && reply.value.createdAt !== undefined) return { ...reply.value, another: true };
  await env.DEFERRED_INDEX.getByName(shardOf(name)).removeSession(name);
  return reply.value;
}
