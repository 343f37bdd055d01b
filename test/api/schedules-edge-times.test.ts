import { describe, expect, it } from "vitest";
import { nextDueAfter } from "../../durable-objects/session/schedules/schedule-times.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { createSchedule, runsOf, until } from "./schedule-helpers.ts";

// Two due times docs/schedules.md "When a schedule runs" promises, which did not hold:
// - "a time that a daylight-saving jump skips runs at the first valid instant after the gap ...
//   (so does each time of a list or range, such as `0 2,14 * * *`)". A single fixed time did; a
//   list's 02:00 was dropped for that day (croner's default counts only single values as fixed
//   times; the "no-wildcard" rule counts lists and ranges too).
// - "`at`: one time ... A time already past runs at once." `at: 0` (the epoch) was accepted, but
//   the platform refuses an alarm at or before 0: the one-off never ran, and the object, believing
//   its alarm armed for 0, armed nothing for any later work either. The alarm is now armed at 1.

const at = (iso: string): number => Date.parse(iso);
const cron = (expression: string, timezone: string) => ({ timing: { cron: expression }, timezone, anchor: 0 });

/** The next Berlin spring-forward day after now (last Sunday of March; clocks jump 02:00 CET → 03:00 CEST at 01:00 UTC). */
function nextBerlinSpringForward(now: number): Date {
  for (let year = new Date(now).getUTCFullYear(); ; year++) {
    const lastOfMarch = new Date(Date.UTC(year, 2, 31, 1));
    const jump = new Date(Date.UTC(year, 2, 31 - lastOfMarch.getUTCDay(), 1));
    if (jump.getTime() > now + 60_000) return jump;
  }
}

describe("a list's fixed time skipped by the spring-forward gap", () => {
  it("`0 2,14 * * *` in Europe/Berlin runs its 02:00 of 29 March 2026 at 03:00 CEST (01:00 UTC), as `0 2 * * *` does", () => {
    const from = at("2026-03-28T20:00:00Z");
    // The single fixed time: at the first valid instant after the gap.
    expect(new Date(nextDueAfter(cron("0 2 * * *", "Europe/Berlin"), from) ?? 0).toISOString()).toBe("2026-03-29T01:00:00.000Z");
    // Each time of a list is a fixed time too: its 02:00 must not vanish.
    expect(new Date(nextDueAfter(cron("0 2,14 * * *", "Europe/Berlin"), from) ?? 0).toISOString()).toBe("2026-03-29T01:00:00.000Z");
  });

  it("a schedule `0 2,14 <spring-forward day> 3 *` in Europe/Berlin answers nextRunAt at the first valid instant after the gap", async () => {
    const setup = await laneSetup("sched_gap");
    const jump = nextBerlinSpringForward(Date.now());
    const day = jump.getUTCDate();
    const single = await createSchedule(setup, { id: "single", cron: `0 2 ${day} 3 *`, timezone: "Europe/Berlin", prompt: "nightly" });
    const listed = await createSchedule(setup, { id: "list", cron: `0 2,14 ${day} 3 *`, timezone: "Europe/Berlin", prompt: "twice daily" });
    expect(single.nextRunAt).toBe(jump.getTime());
    expect(listed.nextRunAt).toBe(jump.getTime());
  });
});

describe("a one-off `at: 0` (the epoch, a time already past)", { timeout: 60_000 }, () => {
  it("is accepted and runs at once, like any past time", async () => {
    const setup = await laneSetup("sched_at0");
    const response = await call(`${setup.lanePath}/schedules`, { body: { id: "epoch", at: 0, prompt: "epoch reminder" }, token: setup.key });
    expect(response.status).toBe(201);
    // A past time runs at once, through the session's own alarm.
    const runs = await until("the epoch one-off's run", () => runsOf(setup, "epoch"), (items) => items.length > 0).catch(() => []);
    expect(runs).toEqual([expect.objectContaining({ dueAt: 0, operationId: expect.any(String) })]);
  });

  it("does not keep a later past one-off of the same session from running at once", async () => {
    const setup = await laneSetup("sched_at0b");
    await call(`${setup.lanePath}/schedules`, { body: { id: "epoch", at: 0, prompt: "epoch reminder" }, token: setup.key });
    const at = Date.now() - 1_000;
    await createSchedule(setup, { id: "later", at, prompt: "later reminder" });
    const runs = await until("the later one-off's run", () => runsOf(setup, "later"), (items) => items.length > 0).catch(() => []);
    expect(runs).toEqual([expect.objectContaining({ dueAt: at, operationId: expect.any(String) })]);
  });
});

describe("a cron expression that never matches a date", () => {
  it("is refused 400 ValidationFailed, and nothing is written", async () => {
    const setup = await laneSetup("sched_never");
    const refused = await call(`${setup.lanePath}/schedules`, { body: { id: "never", cron: "0 0 31 2 *", prompt: "never" }, token: setup.key });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: "ValidationFailed", message: expect.stringContaining("never matches") } });
    expect((await call(`${setup.lanePath}/schedules/never`, { token: setup.key })).status).toBe(404);
    // A date that exists only some years is fine.
    expect((await call(`${setup.lanePath}/schedules`, { body: { id: "leap", cron: "0 0 29 2 *", prompt: "leap day" }, token: setup.key })).status).toBe(201);
  });
});
