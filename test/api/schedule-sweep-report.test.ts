import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { DeferredIndex } from "../../durable-objects/deferred-index/deferred-index.ts";
import type { ListedSchedule } from "../../schema/schedules.ts";
import { tick } from "./deferred-helpers.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { order, signalsReturn, waitsFor, type Wrapper } from "./race-helpers.ts";
import { createSchedule, indexedSchedules, scheduleOf, sessionObject, shardOfSession, until } from "./schedule-helpers.ts";

// The cron's schedule sweep (worker/schedule-sweep.ts) asks an overdue session for its schedules'
// next runs, then reports them to the shard. An edit the session registers between its answer and
// the report stands: the report writes only the rows this sweep leased and nobody registered again
// (schedule-index.ts `report`), so the tenant's listing and the lost-alarm safety net (check_at)
// keep the newer next run.

let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
});

const flags = new Set<string>();

describe("the schedule sweep's report vs an edit registered meanwhile", () => {
  it("the edit's next run stands in the index after the sweep's report", { timeout: 90_000 }, async () => {
    const setup = await laneSetup("rr_schrep");
    const session = `${setup.tenantId}:${setup.sid}`;
    const created = await createSchedule(setup, { everySeconds: 86_400, prompt: "daily" });
    await until("the registration", () => indexedSchedules(setup), (rows) => rows.length === 1);
    // The index finds the session overdue (its alarm lost, as the sweep assumes): check_at passed.
    await runInDurableObject(shardOfSession(setup), (_instance: DeferredIndex, state) => {
      state.storage.sql.exec("UPDATE schedules SET check_at = ? WHERE session = ?", Date.now() - 120_000, session);
    });

    const mine = (wrapper: Wrapper): Wrapper => (run, args, points) => {
      const rows = args[0];
      return Array.isArray(rows) && rows.some((row: { session?: string }) => row.session === session) ? wrapper(run, args, points) : run();
    };
    const asked: Wrapper = async (run) => {
      const value = await run();
      flags.add(session);
      return value;
    };
    ({ restore } = await order([
      { stub: sessionObject(setup), methods: { sweepSchedules: asked } },
      { stub: shardOfSession(setup), methods: { registerSchedules: mine(signalsReturn("edited")), reportSchedules: mine(waitsFor("edited")) } },
    ]));

    const sweeping = tick();
    for (let i = 0; i < 3000 && !flags.has(session); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(flags.has(session)).toBe(true);
    // The session answered its next run; now the schedule is edited to run every two minutes.
    const patched = await call(`${setup.lanePath}/schedules/${created.id}`, { method: "PATCH", body: { everySeconds: 120 }, token: setup.key });
    expect(patched.status).toBe(200);
    await sweeping;
    await restore();
    restore = undefined;

    const own = await scheduleOf(setup, created.id);
    const listing = await (await call("/v1/schedules", { token: setup.key })).json<{ items: ListedSchedule[] }>();
    const listed = listing.items.find((item) => item.id === created.id);
    expect(listed).toMatchObject({ everySeconds: 120 });
    // The tenant-wide listing answers the session's own next run (about two minutes away), not the old day-long one.
    expect(listed?.nextRunAt).toBe(own.nextRunAt);
  });
});
