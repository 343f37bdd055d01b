import type { LeasedRun, SweepReport } from "../durable-objects/deferred-index/deferred-index.ts";
import { DEFERRED_INDEX_SHARDS, shardName } from "../durable-objects/session/due-work/deferred-registrations.ts";

/** Runs one shard hands one sweep at most (oldest due first); the rest wait for the next minute. */
export const SWEEP_PER_SHARD = 25;
/** Sessions asked at once per shard. */
const SWEEP_CONCURRENCY = 5;
/** How long a taken run stays leased (an overlapping sweep skips it) until the sweep reports. */
const LEASE_MS = 5 * 60_000;

/** One sweep's counts, logged as one structured line. */
export interface SweepMetrics {
  shards: number;
  suspended: number;
  due: number;
  resumed: number;
  expired: number;
  gone: number;
  failed: number;
}

/**
 * The minute cron (ARCHITECTURE D8): every DeferredIndex shard hands its due suspended runs (at most
 * SWEEP_PER_SHARD, oldest due first, leased); each run's session is asked, a few at a time, to
 * resume it with one poll permit; the findings go back to the shard. No shard is awaited across a
 * session call: the shard's turns are "take" and "report", each one synchronous SQL turn. A session
 * that cannot be reached keeps its lease and is tried again after it ends.
 */
export async function sweepDeferred(env: Env, now = Date.now()): Promise<SweepMetrics> {
  const metrics: SweepMetrics = { shards: DEFERRED_INDEX_SHARDS, suspended: 0, due: 0, resumed: 0, expired: 0, gone: 0, failed: 0 };
  await Promise.all(
    Array.from({ length: DEFERRED_INDEX_SHARDS }, async (_, index) => {
      const shard = env.DEFERRED_INDEX.getByName(shardName(index));
      const taken = await shard.takeDue(now, SWEEP_PER_SHARD, LEASE_MS);
      metrics.suspended += taken.suspended;
      metrics.due += taken.due;
      const reports = await inBatches(taken.runs, SWEEP_CONCURRENCY, async (run) => askSession(env, run, metrics));
      await shard.report(reports.filter((report): report is SweepReport => report !== undefined), Date.now());
    }),
  );
  console.log(JSON.stringify({ event: "deferred_sweep", at: new Date(now).toISOString(), ...metrics }));
  return metrics;
}

async function askSession(env: Env, run: LeasedRun, metrics: SweepMetrics): Promise<SweepReport | undefined> {
  try {
    const outcome = await env.SESSIONS.getByName(run.session).sweepDeferred(run.lane, run.operationId);
    metrics[outcome]++;
    const { session, operationId } = run;
    return { session, operationId, leasedUntil: run.leasedUntil, outcome };
  } catch {
    metrics.failed++;
    return undefined;
  }
}

/** `work` over `items`, `size` at a time (a sweep asks a few sessions at once, never all). */
export async function inBatches<T, R>(items: readonly T[], size: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += size) results.push(...(await Promise.all(items.slice(start, start + size).map(work))));
  return results;
}
