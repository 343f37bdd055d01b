import type { AgentLane } from "../../harness/runtime/lane.ts";

/**
 * The cron sweep's one poll of a suspended run (ARCHITECTURE D8, reference §3.11). A pass joined
 * keeps its own options (joiners never add permits, §4.1), so joining a live pass that has no
 * permit (a client waiting on the operation, the alarm) would drop the sweep's: that pass ends at
 * the suspended leaf and the next poll slips to the sweep's recheck, minutes later. Such a pass is
 * let end first, then the sweep's pass starts with its permit, if the run is still suspended. A
 * live pass that holds a permit, or is polling already (`deferred.effect_pending`), polls anyway
 * and is joined.
 */
export async function pollSuspended(lane: AgentLane, operationId: string): Promise<void> {
  for (;;) {
    const live = lane.passInfo();
    if (live?.operationId !== operationId || live.deferredPermits > 0 || lane.deferredWait()?.at !== "deferred.suspended") break;
    await lane.activePass?.catch(() => undefined);
    if (lane.state.operation?.meta.operationId !== operationId || lane.deferredWait()?.at !== "deferred.suspended") return;
  }
  await lane.drive({ operationId, waitForRetry: false, pollDeferred: true });
}
