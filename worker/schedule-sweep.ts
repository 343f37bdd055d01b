import type { OverdueSession, ScheduleSweepReport } from "../durable-objects/deferred-index/schedule-index.ts";
import { DEFERRED_INDEX_SHARDS, shardName } from "../durable-objects/session/due-work/deferred-registrations.ts";
import { inBatches } from "./deferred-sweep.ts";

/** Sessions one shard hands one sweep at most (the longest overdue first); the rest wait for the next minute. */
export const SCHEDULE_SWEEP_PER_SHARD = 25;
/** Sessions asked at once per shard. */
const SWEEP_CONCURRENCY = 5;
/** How long a taken session's rows stay leased (an overlapping sweep skips them) until the sweep reports. */
const LEASE_MS = 5 * 60_000;

export interface ScheduleSweepMetrics {
  shards: number;
  sessions: number;
  gone: number;
  failed: number;
}

/**
 * The minute cron's safety net for schedules (ARCHITECTURE D8's pattern, docs/architecture.md):
 * a session fires its schedules from its own alarm; each DeferredIndex shard hands the sessions
 * whose schedule is overdue there (their alarm should have fired and did not: lost, or the object
 * was gone when it was due), at most SCHEDULE_SWEEP_PER_SHARD per tick, leased; each is woken
 * (`sweepSchedules`: it fires what is due, re-arms its alarm and answers its next runs) and the
 * answers go back to the shard. A session that cannot be reached keeps its lease and is tried
 * again after it ends. A due time fired by both the alarm and the sweep still starts one run
 * (its operation id derives from schedule and due time).
 */
export async function sweepSchedules(env: Env, now = Date.now()): Promise<ScheduleSweepMetrics> {
  const metrics: ScheduleSweepMetrics = { shards: DEFERRED_INDEX_SHARDS, sessions: 0, gone: 0, failed: 0 };
  await Promise.all(
    Array.from({ length: DEFERRED_INDEX_SHARDS }, async (_, index) => {
      const shard = env.DEFERRED_INDEX.getByName(shardName(index));
      const taken = await shard.takeOverdueSchedules(now, SCHEDULE_SWEEP_PER_SHARD, LEASE_MS);
      metrics.sessions += taken.length;
      const answers = await inBatches(taken, SWEEP_CONCURRENCY, (session) => wake(env, session, metrics));
      const reports = answers.filter((report): report is ScheduleSweepReport => report !== undefined);
      if (reports.length > 0) await shard.reportSchedules(reports, Date.now());
    }),
  );
  console.log(JSON.stringify({ event: "schedule_sweep", at: new Date(now).toISOString(), ...metrics }));
  return metrics;
}

async function wake(env: Env, overdue: OverdueSession, metrics: ScheduleSweepMetrics): Promise<ScheduleSweepReport | undefined> {
  try {
    const answer = await env.SESSIONS.getByName(overdue.session).sweepSchedules();
    if (answer.gone) metrics.gone++;
    return { session: overdue.session, leasedUntil: overdue.leasedUntil, ...answer };
  } catch {
    metrics.failed++;
    return undefined;
  }
}
