import { describe, expect, it } from "vitest";
import type { ListedSchedule, Schedule } from "../../schema/schedules.ts";
import { adminToken, call, json } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { createSchedule } from "./schedule-helpers.ts";
import { expectError } from "./session-helpers.ts";

// A tenant's sessions hold at most `maxSchedules` schedules together (docs/schedules.md; default
// 1,000, set by the operator like the other quotas): the definitions sit in index shards every
// tenant shares, so one tenant must not grow them without bound.

type Setup = Awaited<ReturnType<typeof laneSetup>>;

async function setMaxSchedules(tenantId: string, maxSchedules: number): Promise<void> {
  const quotas = await json<{ maxSchedules: number }>(await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxSchedules }, token: adminToken() }), 200);
  expect(quotas.maxSchedules).toBe(maxSchedules);
}

/** A second session with a lane of the same tenant. */
async function secondLane(setup: Setup, sid: string): Promise<{ key: string; lanePath: string }> {
  await json(await call("/v1/sessions", { body: { id: sid }, token: setup.key }), 201);
  await json(await call(`/v1/sessions/${sid}/lanes/main`, { method: "PUT", token: setup.key }), 201);
  return { key: setup.key, lanePath: `/v1/sessions/${sid}/lanes/main` };
}

async function tenantSchedules(key: string): Promise<ListedSchedule[]> {
  return (await json<{ items: ListedSchedule[] }>(await call("/v1/schedules?limit=100", { token: key }), 200)).items;
}

async function laneSchedules(target: { key: string; lanePath: string }): Promise<Schedule[]> {
  return (await json<{ items: Schedule[] }>(await call(`${target.lanePath}/schedules`, { token: target.key }), 200)).items;
}

const HOURLY = { cron: "0 * * * *", prompt: "report" };

describe("the tenant's bound on schedules", { timeout: 60_000 }, () => {
  it("defaults to 1,000 and is set by the operator's quotas", async () => {
    const setup = await laneSetup("schq");
    const quotas = await json<{ maxSchedules: number }>(await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { token: adminToken() }), 200);
    expect(quotas.maxSchedules).toBe(1_000);
    await setMaxSchedules(setup.tenantId, 5);
    const bad = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxSchedules: -1 }, token: adminToken() });
    await expectError(bad, 400, "ValidationFailed");
  });

  it("counts across the tenant's sessions: past it a creation is 422 LimitExceeded and nothing is written", async () => {
    const setup = await laneSetup("schbound");
    await setMaxSchedules(setup.tenantId, 2);
    const other = await secondLane(setup, `${setup.sid}-b`);
    await createSchedule(setup, { id: "one", ...HOURLY });
    await createSchedule(other, { id: "two", ...HOURLY });
    const refused = await call(`${other.lanePath}/schedules`, { body: { id: "three", ...HOURLY }, token: setup.key });
    expect(refused.status).toBe(422);
    const { error } = await refused.json<{ error: { code: string; details: Record<string, unknown> } }>();
    expect(error).toMatchObject({ code: "LimitExceeded", details: { resource: "schedules_per_tenant", limit: 2 } });
    // Nothing was written: neither on the lane nor in the tenant's listing.
    expect((await laneSchedules(other)).map((schedule) => schedule.id)).toEqual(["two"]);
    await expectError(await call(`${other.lanePath}/schedules/three`, { token: setup.key }), 404, "ScheduleNotFound");
    expect((await tenantSchedules(setup.key)).map((schedule) => schedule.id).sort()).toEqual(["one", "two"]);

    // At the bound, a repeat of a creation (same id and body) answers its schedule again.
    const repeat = await call(`${setup.lanePath}/schedules`, { body: { id: "one", ...HOURLY }, token: setup.key });
    expect(repeat.status).toBe(200);
    // Another tenant is not held back by this one's count.
    const stranger = await laneSetup("schbound2");
    await setMaxSchedules(stranger.tenantId, 2);
    await createSchedule(stranger, { id: "one", ...HOURLY });
  });

  it("a deleted schedule frees its place at once, and so does a deleted session", async () => {
    const setup = await laneSetup("schfree");
    await setMaxSchedules(setup.tenantId, 1);
    await createSchedule(setup, { id: "first", ...HOURLY });
    await expectError(await call(`${setup.lanePath}/schedules`, { body: { id: "second", ...HOURLY }, token: setup.key }), 422, "LimitExceeded");
    expect((await call(`${setup.lanePath}/schedules/first`, { method: "DELETE", token: setup.key })).status).toBe(204);
    await createSchedule(setup, { id: "second", ...HOURLY });

    // The session's deletion takes its schedules' places with it.
    const other = await secondLane(setup, `${setup.sid}-b`);
    await expectError(await call(`${other.lanePath}/schedules`, { body: { id: "third", ...HOURLY }, token: setup.key }), 422, "LimitExceeded");
    expect((await call(setup.sessionPath, { method: "DELETE", token: setup.key })).status).toBe(204);
    await createSchedule(other, { id: "third", ...HOURLY });
  });

  it("a creation the lane refuses (its 20 held, its id taken) leaves the tenant's count as it was", async () => {
    const setup = await laneSetup("schrefuse");
    await setMaxSchedules(setup.tenantId, 21);
    for (let index = 0; index < 20; index++) await createSchedule(setup, { id: `s${index}`, ...HOURLY });
    await expectError(await call(`${setup.lanePath}/schedules`, { body: { id: "s20", ...HOURLY }, token: setup.key }), 422, "LimitExceeded");
    await expectError(await call(`${setup.lanePath}/schedules`, { body: { id: "s0", cron: "5 * * * *", prompt: "other" }, token: setup.key }), 409, "ScheduleExists");
    // The one place left is still free for another lane.
    const other = await secondLane(setup, `${setup.sid}-b`);
    await createSchedule(other, { id: "last", ...HOURLY });
    await expectError(await call(`${other.lanePath}/schedules`, { body: { id: "past", ...HOURLY }, token: setup.key }), 422, "LimitExceeded");
  });
});
