/** Tenants one minute's tick sweeps at most; the others are due again at the next tick. */
export const RETENTION_TENANTS_PER_TICK = 20;

/** One tick's counts, logged as one structured line. */
export interface RetentionMetrics {
  tenants: number;
  queued: number;
  failed: number;
}

/**
 * The minute cron's retention part (API.md "Data lifecycle"): the admin directory hands the
 * tenants with `sessionRetentionDays` whose sweep is due (at most hourly each, at most
 * RETENTION_TENANTS_PER_TICK per tick: tenant/directory-lifecycle.ts), so a tick never calls every
 * tenant; each tenant queues its sessions idle longer than its retention and deletes a first batch,
 * its alarm the rest (tenant/data-lifecycle.ts). A tenant that cannot be reached is swept again an
 * interval later.
 */
export async function sweepRetention(env: Env, now = Date.now()): Promise<RetentionMetrics> {
  const tenants = await env.TENANTS.getByName("admin:directory").takeTenantsDueForRetention(now, RETENTION_TENANTS_PER_TICK);
  const metrics: RetentionMetrics = { tenants: tenants.length, queued: 0, failed: 0 };
  await Promise.all(
    tenants.map(async (tenantId) => {
      try {
        metrics.queued += (await env.TENANTS.getByName(tenantId).sweepRetention(now)).queued;
      } catch {
        metrics.failed++;
      }
    }),
  );
  if (tenants.length > 0) console.log(JSON.stringify({ event: "retention_sweep", at: new Date(now).toISOString(), ...metrics }));
  return metrics;
}
