import type { OpenOperation } from "../../durable-objects/tenant-operations.ts";
import type { RpcResult } from "../../schema/errors.ts";
import { fromWire, type Wire } from "../../schema/wire.ts";
import { sessionStub, tenantStub } from "../env.ts";
import { fail, replyValue } from "../http-error.ts";

/** What a refused reservation tells the client to wait before retrying. */
const RETRY_AFTER_SECONDS = 5;

/**
 * The tenant's concurrent open operations quota around one accept (POST …/operations, …/prompt):
 * a slot is reserved before the session is called, released when the accept fails, and bound to
 * the accepted operation's id otherwise; the session object releases it when the operation
 * settles. A refusal is healed once (lost releases) before it becomes 429 RateLimited.
 */
export async function withOpenOperation<T>(
  env: Env,
  scope: { tenantId: string; sessionId: string; lane: string },
  accept: () => Promise<Wire<RpcResult<T>>>,
  operationIdOf: (value: T) => string,
): Promise<T> {
  const tenant = tenantStub(env, scope.tenantId);
  const reservationId = await reserve(env, scope);
  let value: T;
  try {
    value = replyValue(await accept());
  } catch (error) {
    // A failed release leaves an unbound reservation, which expires on its own.
    await tenant.releaseOperation(reservationId).catch(() => undefined);
    throw error;
  }
  // The operation is accepted whatever happens here: a failed bind leaves an expiring reservation.
  await tenant.bindOperation(reservationId, operationIdOf(value)).catch(() => undefined);
  return value;
}

async function reserve(env: Env, scope: { tenantId: string; sessionId: string; lane: string }): Promise<string> {
  const tenant = tenantStub(env, scope.tenantId);
  const first = await tenant.reserveOperation(scope.sessionId, scope.lane);
  if (first.ok) return first.reservationId;
  const stale = await staleOperations(env, scope.tenantId, first.openOperations);
  await Promise.all(stale.map((operationId) => tenant.releaseOperation(operationId)));
  // Retried once even when nothing was stale: a release may have landed meanwhile.
  const second = await tenant.reserveOperation(scope.sessionId, scope.lane);
  if (second.ok) return second.reservationId;
  throw fail("RateLimited", `The tenant's open operations quota is used up; retry in ${RETRY_AFTER_SECONDS} s`, {
    quota: "maxOpenOperations",
    retryAfterSeconds: RETRY_AFTER_SECONDS,
  });
}

/**
 * The listed operations whose sessions no longer have them current (settled, unknown, or the
 * session or lane gone): their release was lost. Read-only: asks with no wait and drives nothing.
 * An answer that is not conclusive (the session shutting down, a failed call) keeps the slot.
 */
async function staleOperations(env: Env, tenantId: string, open: readonly OpenOperation[]): Promise<string[]> {
  const verdicts = await Promise.all(
    open.map(async ({ sessionId, lane, operationId }) => {
      try {
        const result = fromWire(await sessionStub(env, tenantId, sessionId).operation(lane, operationId, 0));
        if (result.ok) return result.value.state === "settled" ? operationId : undefined;
        const gone = ["OperationMismatch", "SessionNotFound", "UnknownLane"].includes(result.error.code);
        return gone ? operationId : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  return verdicts.filter((id): id is string => id !== undefined);
}
