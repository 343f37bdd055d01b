import { describe, expect, it } from "vitest";
import type { ListedSchedule, Schedule } from "../../schema/schedules.ts";
import { call, errorCode, newTenant } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { createSchedule, indexedSchedules, until } from "./schedule-helpers.ts";

// Schedules through the public API (spec/API.md "Schedules"): creation, listing, edits, pause and
// resume, deletion, bounds, tenant isolation and Idempotency-Key.

const MINUTE = 60_000;

describe("schedules: definitions", () => {
  it("creates, lists, reads, edits, pauses, resumes and deletes a schedule", async () => {
    const setup = await laneSetup("sch");
    const created = await createSchedule(setup, { cron: "0 9 * * *", timezone: "Europe/Berlin", prompt: "Good morning" });
    expect(created).toMatchObject({ sessionId: setup.sid, lane: "main", cron: "0 9 * * *", timezone: "Europe/Berlin", prompt: "Good morning", ifBusy: "reject", paused: false, lastRun: null });
    expect(created.id).toMatch(/^sch_/);
    expect(created.nextRunAt).toBeGreaterThan(Date.now());
    // 09:00 in Berlin is 07:00 or 08:00 UTC.
    expect([7, 8]).toContain(new Date(created.nextRunAt ?? 0).getUTCHours());

    const listed = await (await call(`${setup.lanePath}/schedules`, { token: setup.key })).json<{ items: Schedule[] }>();
    expect(listed.items).toEqual([created]);

    const every = await call(`${setup.lanePath}/schedules/${created.id}`, { method: "PATCH", body: { everySeconds: 3600, prompt: "Hourly" }, token: setup.key });
    expect(every.status).toBe(200);
    const edited = await every.json<Schedule>();
    expect(edited).toMatchObject({ everySeconds: 3600, prompt: "Hourly" });
    expect(edited).not.toHaveProperty("cron");
    expect(edited.nextRunAt).toBeGreaterThan(Date.now() + 59 * MINUTE);

    const paused = await (await call(`${setup.lanePath}/schedules/${created.id}`, { method: "PATCH", body: { paused: true }, token: setup.key })).json<Schedule>();
    expect(paused).toMatchObject({ paused: true, nextRunAt: null });
    const resumed = await (await call(`${setup.lanePath}/schedules/${created.id}`, { method: "PATCH", body: { paused: false }, token: setup.key })).json<Schedule>();
    expect(resumed).toMatchObject({ paused: false, nextRunAt: edited.nextRunAt });

    expect((await call(`${setup.lanePath}/schedules/${created.id}`, { method: "DELETE", token: setup.key })).status).toBe(204);
    const gone = await call(`${setup.lanePath}/schedules/${created.id}`, { token: setup.key });
    expect(gone.status).toBe(404);
    expect(await errorCode(gone)).toBe("ScheduleNotFound");
    expect((await call(`${setup.lanePath}/schedules/${created.id}`, { method: "DELETE", token: setup.key })).status).toBe(404);
  });

  it("refuses bad timings, zones, prompts and bodies with 400, writing nothing", async () => {
    const setup = await laneSetup("schb");
    const bad = [
      { cron: "0 0 9 * * *", prompt: "seconds field" },
      { cron: "61 * * * *", prompt: "no minute 61" },
      { cron: "* * * * *", timezone: "Mars/Olympus", prompt: "no such zone" },
      { everySeconds: 59, prompt: "too often" },
      { everySeconds: 60.5, prompt: "fraction" },
      { cron: "* * * * *", everySeconds: 60, prompt: "two timings" },
      { prompt: "no timing" },
      { everySeconds: 60, prompt: "" },
      { everySeconds: 60, prompt: "x".repeat(32_001) },
      { everySeconds: 60, prompt: "p", ifBusy: "later" },
      { everySeconds: 60, prompt: "p", extra: true },
      { at: Date.now() + 20 * 366 * 24 * 3600 * 1000, prompt: "too far" },
    ];
    for (const body of bad) {
      const response = await call(`${setup.lanePath}/schedules`, { body, token: setup.key });
      expect(response.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(await errorCode(response)).toBe("ValidationFailed");
    }
    const problem = await (await call(`${setup.lanePath}/schedules`, { body: bad[0], token: setup.key })).json<{ error: { message: string } }>();
    expect(problem.error.message).toMatch(/5 fields/);
    const listed = await (await call(`${setup.lanePath}/schedules`, { token: setup.key })).json<{ items: unknown[] }>();
    expect(listed.items).toEqual([]);
    const patch = await call(`${setup.lanePath}/schedules/x`, { method: "PATCH", body: { everySeconds: 10 }, token: setup.key });
    expect(patch.status).toBe(400);
  });

  it("holds at most 20 schedules per lane (422 LimitExceeded), and answers 404 for an unknown lane", async () => {
    const setup = await laneSetup("schl");
    for (let i = 0; i < 20; i++) await createSchedule(setup, { id: `s${i}`, everySeconds: 3600, prompt: `p${i}` });
    const refused = await call(`${setup.lanePath}/schedules`, { body: { everySeconds: 3600, prompt: "one too many" }, token: setup.key });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "schedules_per_lane", limit: 20 } } });
    const other = await call(`${setup.sessionPath}/lanes/other/schedules`, { body: { everySeconds: 3600, prompt: "p" }, token: setup.key });
    expect(other.status).toBe(404);
    expect(await errorCode(other)).toBe("UnknownLane");
  });

  it("a repeated creation with the same id and body answers the same schedule; another body under the id is 409 ScheduleExists", async () => {
    const setup = await laneSetup("schi");
    const body = { id: "daily", cron: "0 7 * * *", prompt: "Report" };
    const first = await createSchedule(setup, body);
    const again = await call(`${setup.lanePath}/schedules`, { body, token: setup.key });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(first);
    const conflict = await call(`${setup.lanePath}/schedules`, { body: { ...body, prompt: "Other" }, token: setup.key });
    expect(conflict.status).toBe(409);
    expect(await errorCode(conflict)).toBe("ScheduleExists");
  });

  it("Idempotency-Key replays a creation without a second schedule", async () => {
    const setup = await laneSetup("schk");
    const request = { body: { everySeconds: 600, prompt: "Ping" }, token: setup.key, headers: { "idempotency-key": "sched-1" } };
    const first = await call(`${setup.lanePath}/schedules`, request);
    const second = await call(`${setup.lanePath}/schedules`, request);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get("idempotency-replayed")).toBe("true");
    expect(await second.json()).toEqual(await first.json());
    const listed = await (await call(`${setup.lanePath}/schedules`, { token: setup.key })).json<{ items: unknown[] }>();
    expect(listed.items).toHaveLength(1);
    const conflict = await call(`${setup.lanePath}/schedules`, { ...request, body: { everySeconds: 600, prompt: "Other" } });
    expect(conflict.status).toBe(422);
  });

  it("another tenant's key finds nothing (404) and lists none of them", async () => {
    const setup = await laneSetup("scho");
    const created = await createSchedule(setup, { everySeconds: 600, prompt: "Mine" });
    const other = await newTenant("schx");
    const path = `${setup.lanePath}/schedules/${created.id}`;
    for (const request of [
      call(`${setup.lanePath}/schedules`, { token: other.key }),
      call(path, { token: other.key }),
      call(path, { method: "PATCH", body: { paused: true }, token: other.key }),
      call(path, { method: "DELETE", token: other.key }),
      call(`${path}/runs`, { token: other.key }),
      call(`${setup.lanePath}/schedules`, { body: { everySeconds: 600, prompt: "Theirs" }, token: other.key }),
    ]) {
      const response = await request;
      expect(response.status).toBe(404);
      expect(await errorCode(response)).toBe("SessionNotFound");
    }
    await until("the registration", () => indexedSchedules(setup), (rows) => rows.length === 1);
    const theirs = await (await call("/v1/schedules", { token: other.key })).json<{ items: unknown[] }>();
    expect(theirs.items).toEqual([]);
    expect(((await call(path, { token: setup.key })).status)).toBe(200);
  });

  it("lists the tenant's schedules from the index, paged, and a deleted schedule or session leaves it", async () => {
    const tenantSetup = await laneSetup("schp");
    const sessions = [tenantSetup];
    for (let i = 0; i < 2; i++) {
      const sid = `${tenantSetup.sid}_${i}`;
      expect((await call("/v1/sessions", { body: { id: sid }, token: tenantSetup.key })).status).toBe(201);
      expect((await call(`/v1/sessions/${sid}/lanes/main`, { method: "PUT", token: tenantSetup.key })).status).toBe(201);
      sessions.push({ ...tenantSetup, sid, sessionPath: `/v1/sessions/${sid}`, lanePath: `/v1/sessions/${sid}/lanes/main` });
    }
    for (const session of sessions) for (const id of ["a", "b"]) await createSchedule(session, { id, everySeconds: 3600, prompt: `${session.sid} ${id}` });
    for (const session of sessions) await until("the registrations", () => indexedSchedules(session), (rows) => rows.length === 2);
    const seen: ListedSchedule[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const query: string = cursor === null ? "?limit=4" : `?limit=4&cursor=${cursor}`;
      const body: { items: ListedSchedule[]; nextCursor: string | null } = await (await call(`/v1/schedules${query}`, { token: tenantSetup.key })).json();
      seen.push(...body.items);
      cursor = body.nextCursor;
      if (cursor === null) break;
    }
    expect(seen.map((s) => `${s.sessionId}/${s.id}`)).toEqual(sessions.flatMap((s) => [`${s.sid}/a`, `${s.sid}/b`]).sort());
    expect(seen[0]).toMatchObject({ everySeconds: 3600, paused: false, lane: "main" });
    expect(seen[0]?.nextRunAt).toBeGreaterThan(Date.now());
    expect((await call("/v1/schedules?cursor=bad", { token: tenantSetup.key })).status).toBe(400);

    expect((await call(`${sessions[0]?.lanePath}/schedules/a`, { method: "DELETE", token: tenantSetup.key })).status).toBe(204);
    expect((await call(sessions[1]?.sessionPath ?? "", { method: "DELETE", token: tenantSetup.key })).status).toBe(204);
    await until("the removal", () => indexedSchedules(tenantSetup), (rows) => rows.length === 1);
    const after = await (await call("/v1/schedules", { token: tenantSetup.key })).json<{ items: ListedSchedule[] }>();
    expect(after.items.map((s) => `${s.sessionId}/${s.id}`)).toEqual([`${tenantSetup.sid}/b`, `${sessions[2]?.sid}/a`, `${sessions[2]?.sid}/b`]);
  });
});
