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
