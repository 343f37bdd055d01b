import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardName } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { runInDurableObject } from "cloudflare:test";
import { SCHEDULE_SWEEP_PER_SHARD } from "../../worker/schedule-sweep.ts";
import { tick } from "./deferred-helpers.ts";

// The minute cron's safety net for schedules (worker/schedule-sweep.ts) through the worker's own
// `scheduled()`: it wakes at most SCHEDULE_SWEEP_PER_SHARD sessions per shard and tick, the longest
// overdue first, and a session that holds nothing any more ("gone") leaves the index.

describe("the schedule sweep (scheduled)", () => {
  it("wakes a bounded number of overdue sessions per shard and tick; gone sessions leave the index", async () => {
    const shard = env.DEFERRED_INDEX.getByName(shardName(3));
    const tenantId = `sweep_${Date.now().toString(36)}`;
    const total = SCHEDULE_SWEEP_PER_SHARD + 5;
    const dueAt = Date.now() - 10 * 60_000;
    // Registrations of sessions that do not exist (deleted without their index rows leaving, say).
    await shard.registerSchedules(
      Array.from({ length: total }, (_, index) => ({
        session: `${tenantId}:ghost${index}`,
        tenantId,
        anchor: dueAt - 60_000,
        nextRunAt: dueAt,
        definition: { id: "tick", sessionId: `ghost${index}`, lane: "main", everySeconds: 60, timezone: "UTC", prompt: "p", ifBusy: "reject" as const, paused: false, createdAt: dueAt, updatedAt: dueAt },
      })),
    );
    const remaining = () =>
      runInDurableObject(shard, (_instance, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM schedules WHERE tenant_id = ?", tenantId).one().n);
    expect(await remaining()).toBe(total);
    await tick();
    // Other tests' overdue rows in this shard may take part of the tick's budget: at least `total - bound` stay.
    expect(await remaining()).toBeGreaterThanOrEqual(total - SCHEDULE_SWEEP_PER_SHARD);
    for (let ticks = 0; ticks < 5 && (await remaining()) > 0; ticks++) await tick();
    expect(await remaining()).toBe(0);
  });
});
