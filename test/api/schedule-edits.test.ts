import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Schedule } from "../../schema/schedules.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { runInDurableObject } from "cloudflare:test";
import { alarm, createSchedule, dueNow, runsOf, scheduleOf, sessionObject, until } from "./schedule-helpers.ts";

// docs/schedules.md: "`nextRunAt` is null when the schedule is paused or a one-off has run", and
// "Each due time starts at most one run". A one-off's due time is its `at`, whatever the zone.

const MINUTE = 60_000;

describe("schedule edits and repeated firings", { timeout: 60_000 }, () => {
  it("a one-off that has run stays done when only its timezone is edited (no second firing, no slot held)", async () => {
    const setup = await laneSetup("rvsch_tz");
    const at = Date.now() - 5_000;
    await createSchedule(setup, { id: "once", at, prompt: "one-off reminder" });
    await alarm(setup);
    const [first] = await until("the run", () => runsOf(setup, "once"), (runs) => runs.length === 1 && runs[0]?.operationId !== undefined);
    const tenant = env.TENANTS.getByName(setup.tenantId);
    await until("the run to settle (its slot freed)", () => tenant.openOperationCount(), (count) => count === 0);
    expect((await scheduleOf(setup, "once")).nextRunAt).toBeNull();

    const patched = await call(`${setup.lanePath}/schedules/once`, { method: "PATCH", body: { timezone: "Europe/Berlin" }, token: setup.key });
    expect(patched.status).toBe(200);
    const view = await patched.json<Schedule>();
    // The time zone says nothing about an epoch time: the one-off has run and has no next run.
    expect.soft(view.nextRunAt).toBeNull();

    await alarm(setup);
    await alarm(setup);
    expect(await runsOf(setup, "once")).toEqual([first]);
    expect(await tenant.openOperationCount()).toBe(0);
  });

  it("a due time fired again after its run settled (the firing's record lost to a crash) leaves no slot held", async () => {
    const setup = await laneSetup("rvsch_refire");
    const at = Date.now() - 5_000;
    await createSchedule(setup, { id: "once", at, prompt: "one-off reminder" });
    await alarm(setup);
    await until("the run", () => runsOf(setup, "once"), (runs) => runs.length === 1 && runs[0]?.operationId !== undefined);
    const tenant = env.TENANTS.getByName(setup.tenantId);
    await until("the run to settle (its slot freed)", () => tenant.openOperationCount(), (count) => count === 0);
    // As if the object had died after the run started and before the due time was recorded reached.
    await dueNow(setup, "once", at);
    await alarm(setup);
    await until("the due time reached again", () => scheduleOf(setup, "once"), (schedule) => schedule.nextRunAt === null);
    // The repeated reservation bound a slot to the settled run's id; the firing gave it back.
    expect(await tenant.openOperationCount()).toBe(0);
  });

  it("coalesced counts every due time missed during a long outage (here 2 days of an every-minute schedule)", async () => {
    const setup = await laneSetup("rvsch_coal");
    await createSchedule(setup, { id: "minutely", everySeconds: 60, prompt: "minute ping" });
    // As if created two days and a minute ago and down since its first due time: the anchor and
    // the stored due time both moved back (the firing counts the missed ones from the anchor's grid).
    const created = await scheduleOf(setup, "minutely");
    const dueAt = (created.nextRunAt ?? 0) - 2 * 24 * 60 * MINUTE;
    await runInDurableObject(sessionObject(setup), (_instance, state) => {
      state.storage.sql.exec("UPDATE schedules SET anchor = ? WHERE id = ?", dueAt - MINUTE, "minutely");
    });
    await dueNow(setup, "minutely", dueAt);
    const [run] = await until("the coalesced run", async () => {
      await alarm(setup);
      return runsOf(setup, "minutely");
    }, (runs) => runs.length > 0);
    expect(run?.dueAt).toBe(dueAt);
    const missedLater = Math.floor(((run?.firedAt ?? 0) - dueAt) / MINUTE);
    expect(missedLater).toBeGreaterThan(2_000);
    expect(run?.coalesced).toBe(missedLater);
  });
});
