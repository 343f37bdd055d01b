import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Schedule, ScheduleRun } from "../../schema/schedules.ts";
import { Api, createTenant, pollUntil, readAdminToken, settled } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// A `* * * * *` schedule against `npm start`, whose cron (scripts/local-cron.mjs) fires the
// worker's scheduled() at every minute start, beside the session's own alarm due at the same
// instant: each minute the server is up starts exactly one run, and the minutes missed while the
// process was SIGKILLed start at most one run between them, once it is up again. About three
// minutes of real time: one minute boundary before the kill, one while down, one after.

const MINUTE = 60_000;
const minuteOf = (time: number): number => Math.floor(time / MINUTE) * MINUTE;

describe("a minute schedule across a killed process", () => {
  const persistDir = mkdtempSync(join(tmpdir(), "das-e2e-sched-"));
  const servers: DevServer[] = [];
  printServerOutputOnFailure(() => servers);
  afterAll(async () => {
    for (const server of servers) await server.stop();
    rmSync(persistDir, { recursive: true, force: true });
  });

  it("fires one run per due time while up, none twice, and one run for the minutes it was down", { timeout: 240_000 }, async () => {
    const first = await startDevServer({ persistDir });
    servers.push(first);
    const { key, api } = await createTenant(new Api(first.baseUrl, readAdminToken()), "sched");
    const sid = "minutely";
    const lane = `/v1/sessions/${sid}/lanes/main`;
    await api.expect(201, "POST", "/v1/sessions", { body: { id: sid } });
    await api.expect(201, "PUT", lane, { body: { model: { provider: "scripted", modelId: "echo" } } });
    const schedule = await api.expect<Schedule>(201, "POST", `${lane}/schedules`, { body: { id: "tick", cron: "* * * * *", prompt: "minute report" } });
    const runsOf = async (target: Api) => (await target.expect<{ items: ScheduleRun[] }>(200, "GET", `${lane}/schedules/tick/runs`)).items;

    // The first due time, fired while up (by the alarm and/or the cron's sweep: one run).
    const [firstRun] = await pollUntil("the first minute's run", () => runsOf(api), (runs) => runs.length > 0, 75_000);
    expect(firstRun).toMatchObject({ dueAt: schedule.nextRunAt, operationId: expect.any(String) });
    expect(firstRun).not.toHaveProperty("coalesced");
    await settled(api, sid, firstRun?.operationId ?? "");

    // Down across the next minute boundary.
    await first.kill();
    const missed = minuteOf(Date.now()) + MINUTE;
    await new Promise((resolve) => setTimeout(resolve, missed + 3_000 - Date.now()));

    const second = await startDevServer({ persistDir });
    servers.push(second);
    const again = new Api(second.baseUrl, key);
    const upAgainAt = Date.now();
    // The missed minute(s) start one run once up; then the next minute start its own.
    const runs = await pollUntil("a run of a minute after the restart", () => runsOf(again), (items) => (items[0]?.dueAt ?? 0) > upAgainAt, 90_000);
    const dueTimes = runs.map((run) => run.dueAt);
    expect(new Set(dueTimes).size).toBe(dueTimes.length);
    expect(runs.every((run) => run.operationId !== undefined && run.skipped === undefined)).toBe(true);
    expect(new Set(runs.map((run) => run.operationId)).size).toBe(runs.length);
    // Oldest first: the minute fired before the kill, one run for the outage carrying its first
    // missed minute, and each minute since the restart.
    const ordered = [...runs].reverse();
    expect(ordered[0]?.dueAt).toBe(firstRun?.dueAt);
    expect(ordered[1]?.dueAt).toBe(missed);
    expect(missed).toBe((firstRun?.dueAt ?? 0) + MINUTE);
    // No minute skipped: each run's due time follows the previous run's and those it coalesced.
    for (let index = 2; index < ordered.length; index++) {
      const previous = ordered[index - 1];
      expect(ordered[index]?.dueAt).toBe((previous?.dueAt ?? 0) + MINUTE * (1 + (previous?.coalesced ?? 0)));
      expect(ordered[index]?.dueAt).toBeGreaterThan(upAgainAt);
    }
    for (const run of ordered) await settled(again, sid, run.operationId ?? "");
  });
});
