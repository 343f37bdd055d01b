import { createExecutionContext, createScheduledController, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { DeferredIndex } from "../../durable-objects/deferred-index/deferred-index.ts";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import worker from "../../worker/index.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";

/** One minute-cron tick of the real worker's `scheduled()` (ARCHITECTURE D8), run to its end. */
export async function tick(): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** A lane whose prompt answered `suspended` on a scripted deferred step, and the shard its session registers with. */
export async function suspendedRun(prefix: string, ready: ScriptStep = { text: "fetched by the cron" }, pollAfterMs?: number) {
  const setup = await laneSetup(prefix);
  await useScript(setup, [{ deferred: { ...(pollAfterMs !== undefined && { pollAfterMs }), ready } }]);
  const answer = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "later", wait: 30 }, token: setup.key })).json<{ status: string; operationId: string }>();
  expect(answer.status).toBe("suspended");
  const shard = env.DEFERRED_INDEX.getByName(shardOf(`${setup.tenantId}:${setup.sid}`));
  return { ...setup, operationId: answer.operationId, shard };
}

/** Whether the shard holds a row for `operationId` (read in the shard itself). */
export function indexed(shard: DurableObjectStub<DeferredIndex>, operationId: string): Promise<boolean> {
  return runInDurableObject(shard, (_instance: DeferredIndex, state) => {
    // A shard no registration has reached yet has no table (LazySchema): it holds nothing.
    const exists = state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'suspended_runs'").toArray().length > 0;
    return exists && state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM suspended_runs WHERE operation_id = ?", operationId).one().n > 0;
  });
}

/**
 * Makes a DeferredIndex shard refuse every write to the suspended-run rows of one session (its
 * object name), as an unreachable shard would for it, or heals it. The refusal is a set of SQLite
 * triggers scoped to that session: shards are shared by every test file that runs in the same
 * runtime (vitest.config.ts `isolate: false`), so breaking a whole shard would fail other files'
 * sweeps and removals while it lasts. A row is registered for the session first (and left to the
 * heal to remove), so that a removal by session name has a row to be refused on.
 */
export async function blockSessionRows(shard: DurableObjectStub<DeferredIndex>, session: string, blocked: boolean): Promise<void> {
  if (blocked) await shard.register([{ session, lane: "main", operationId: `block_${session}`, dueAt: Date.now() + 86_400_000 }]);
  const name = `block_${session.replace(/[^A-Za-z0-9_]/g, "_")}`;
  await runInDurableObject(shard, (_instance: DeferredIndex, state) => {
    for (const [suffix, event, row] of [["i", "INSERT", "NEW"], ["u", "UPDATE", "NEW"], ["d", "DELETE", "OLD"]] as const) {
      state.storage.sql.exec(
        blocked
          ? `CREATE TRIGGER ${name}_${suffix} BEFORE ${event} ON suspended_runs WHEN ${row}.session = '${session.replace(/'/g, "''")}' BEGIN SELECT RAISE(ABORT, 'shard unreachable (test)'); END`
          : `DROP TRIGGER IF EXISTS ${name}_${suffix}`,
      );
    }
  });
  if (!blocked) await shard.unregister(session, [`block_${session}`]);
}
