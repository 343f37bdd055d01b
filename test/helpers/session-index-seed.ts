import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { SessionSummary } from "../../schema/api.ts";
import { SessionIndex } from "../../durable-objects/tenant/tenant-listings.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";

/**
 * Writes `count` rows into the tenant's session index the way registration does (SessionIndex),
 * without session objects behind them: creating that many sessions through the API would take
 * minutes, and a search reads only the index. Transactions of 2,000 rows keep each one bounded.
 */
export async function seedSessionIndex(tenantId: string, count: number, summaryOf: (i: number) => SessionSummary): Promise<void> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    const index = new SessionIndex(state.storage.sql);
    for (let start = 0; start < count; start += 2_000) {
      state.storage.transactionSync(() => {
        for (let i = start; i < Math.min(count, start + 2_000); i++) index.register(summaryOf(i));
      });
    }
  });
}

/** Marks `sessionIds` as having an open operation in the tenant's ledger (bound rows, as a bind writes them). */
export async function openOperationsOf(tenantId: string, sessionIds: readonly string[]): Promise<void> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    for (const sessionId of sessionIds) {
      state.storage.sql.exec(
        "INSERT INTO open_operations (operation_id, session_id, lane, reserved_at, bound) VALUES (?, ?, 'main', ?, 1)",
        `op_${sessionId}`,
        sessionId,
        Date.now(),
      );
    }
  });
}
