import { fromWire } from "../../schema/wire.ts";
import type { OpenOperation, Reservation } from "./tenant-operations.ts";

// A refused open-operation reservation, healed once (ARCHITECTURE D2 quotas): the tenant lists
// (at most once per 30 s) the operations it counts open; those whose sessions no longer have them
// current lost their release, and are released before the reservation is tried again. Every path
// that reserves a slot for a client's accept heals the same way (REST accepts in
// worker/routes/open-operations.ts, socket commands in session/watch/socket-commands.ts), so a
// refusal on one path never spends the listing another would have healed with.

/**
 * Releases the listed operations that are stale, then reserves again (even when none was: a
 * release may have landed meanwhile). The refused reservation's listing is `listed`.
 */
export async function reserveAfterHealing(env: Env, tenantId: string, sessionId: string, lane: string, listed: readonly OpenOperation[]): Promise<Reservation> {
  const tenant = env.TENANTS.getByName(tenantId);
  const stale = await staleOperations(env, tenantId, listed);
  await Promise.all(stale.map((operation) => tenant.releaseOperation(operation.sessionId, operation.operationId)));
  return tenant.reserveOperation(sessionId, lane);
}

/**
 * The listed operations whose sessions no longer have them current (settled, unknown, or the
 * session or lane gone): their release was lost. Read-only: asks with no wait and drives nothing.
 * An answer that is not conclusive (the session shutting down, a failed call) keeps the slot.
 */
async function staleOperations(env: Env, tenantId: string, open: readonly OpenOperation[]): Promise<OpenOperation[]> {
  const verdicts = await Promise.all(
    open.map(async (operation) => {
      try {
        const session = env.SESSIONS.getByName(`${tenantId}:${operation.sessionId}`);
        const result = fromWire(await session.operation(operation.lane, operation.operationId, 0));
        if (result.ok) return result.value.state === "settled" ? operation : undefined;
        const gone = ["OperationMismatch", "SessionNotFound", "UnknownLane"].includes(result.error.code);
        return gone ? operation : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  return verdicts.filter((operation): operation is OpenOperation => operation !== undefined);
}
