import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { ScheduleStore } from "../../durable-objects/session/schedules/schedule-store.ts";
import { scheduledOperationId } from "../../durable-objects/session/schedules/schedule-times.ts";
import type { ScheduleRun } from "../../schema/schedules.ts";
import { adminToken, call } from "./helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";
import { alarm, alarmUntilRuns, createSchedule, dueNow, indexedSchedules, runsOf, scheduleOf, sessionObject, shardOfSession, until } from "./schedule-helpers.ts";
import { tick } from "./deferred-helpers.ts";
import { breakTenant, deliveries, receiver, register } from "./webhooks-helpers.ts";

// Schedules firing (spec/API.md "Schedules"): through the session's real alarm and the worker's own
// `scheduled()`. A cron's next due time is a minute away at best, so tests move the stored due time
// into the past (dueNow) instead of waiting for it; the firing itself is the real one.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

async function settledStatus(setup: { key: string; lanePath: string }, operationId: string): Promise<string | undefined> {
  const view = await (await call(`${setup.lanePath}/operations/${operationId}?wait=10`, { token: setup.key })).json<{ state: string; result?: { status: string } }>();
  return view.state === "settled" ? view.result?.status : undefined;
}

/** How many entries of the session hold the prompt text as a user message. */
async function promptsPlaced(setup: { key: string; sessionPath: string }, text: string): Promise<number> {
  const page = await (await call(`${setup.sessionPath}/entries?type=message&limit=1000`, { token: setup.key })).json<{ items: { message?: { role: string; content: unknown } }[] }>();
  return page.items.filter((entry) => entry.message?.role === "user" && JSON.stringify(entry.message.content).includes(text)).length;
}

describe("schedules: firing", () => {
  it("a one-off `at` fires once through the real alarm, and its run settles", async () => {
    const setup = await laneSetup("schf");
    // A time already past runs at once (the alarm is armed for it).
    const at = Date.now() - 1_000;
    const schedule = await createSchedule(setup, { at, prompt: "one-off ping" });
    const [run] = await until("the run", () => runsOf(setup, schedule.id), (runs) => runs.length > 0);
    expect(run).toMatchObject({ dueAt: at, operationId: scheduledOperationId(schedule, at) });
    expect(await until("the settlement", () => settledStatus(setup, run?.operationId ?? ""), (status) => status !== undefined)).toBe("completed");
    await alarm(setup);
    expect(await runsOf(setup, schedule.id)).toHaveLength(1);
    expect(await scheduleOf(setup, schedule.id)).toMatchObject({ nextRunAt: null, lastRun: { dueAt: at, operationId: run?.operationId } });
    expect(await promptsPlaced(setup, "one-off ping")).toBe(1);
  });

  it("a firing that reaches its due time after an edit or a deletion meanwhile keeps the edit and records no orphan run", async () => {
    const setup = await laneSetup("schedit");
    const edited = await createSchedule(setup, { id: "edited", cron: "* * * * *", prompt: "edited meanwhile" });
    const deleted = await createSchedule(setup, { id: "deleted", cron: "* * * * *", prompt: "deleted meanwhile" });
    await dueNow(setup, edited.id);
    await dueNow(setup, deleted.id);
    // The firing reads the schedule, then awaits the tenant and the lane (schedule-firing.ts); an
    // edit or a deletion can land in between. Played here in that order, in the object itself.
    const outcome = await runInDurableObject(sessionObject(setup), (_instance: SessionObject, state) => {
      const store = new ScheduleStore(state.storage.sql, Date.now);
      const [readEdited, readDeleted] = [store.get(edited.id), store.get(deleted.id)];
      if (!readEdited?.nextRunAt || !readDeleted?.nextRunAt) throw new Error("both schedules are due");
      const editedNext = Date.now() + 3_600_000;
      state.storage.sql.exec("UPDATE schedules SET next_run_at = ? WHERE id = ?", editedNext, edited.id);
      store.delete(deleted.id);
      for (const read of [readEdited, readDeleted]) store.reached(read, { dueAt: read.nextRunAt ?? 0, firedAt: Date.now(), skipped: "lane_busy" }, Date.now() + 60_000);
      return {
        editedNext,
        nextRunAt: store.get(edited.id)?.nextRunAt,
        runs: state.storage.sql.exec<{ schedule_id: string }>("SELECT schedule_id FROM schedule_runs ORDER BY schedule_id").toArray().map((row) => row.schedule_id),
      };
    });
    expect(outcome.nextRunAt).toBe(outcome.editedNext);
    expect(outcome.runs).toEqual([edited.id]);
  });

  it("a due time fired by the alarm and the sweep at once, and again as if the firing's record were lost, starts one run", async () => {
    const setup = await laneSetup("schd");
    const schedule = await createSchedule(setup, { cron: "* * * * *", prompt: "minute ping" });
    const dueAt = Date.now() - 1_000;
    await dueNow(setup, schedule.id, dueAt);
    await Promise.all([alarm(setup), sessionObject(setup).sweepSchedules(), sessionObject(setup).sweepSchedules()]);
    const runs = await runsOf(setup, schedule.id);
    expect(runs).toEqual([expect.objectContaining({ dueAt, operationId: scheduledOperationId(schedule, dueAt) })]);
    const operationId = runs[0]?.operationId ?? "";
    expect(await until("the settlement", () => settledStatus(setup, operationId), (status) => status !== undefined)).toBe("completed");
    // As if the object died after the run's acceptance and before its record: the same due time
    // is due again. Its derived operation id is taken, so no second run starts.
    await runInDurableObject(sessionObject(setup), (_instance: SessionObject, state) => {
      state.storage.sql.exec("DELETE FROM schedule_runs WHERE schedule_id = ?", schedule.id);
    });
    await dueNow(setup, schedule.id, dueAt);
    await alarm(setup);
    expect(await runsOf(setup, schedule.id)).toEqual([expect.objectContaining({ dueAt, operationId })]);
    expect(await promptsPlaced(setup, "minute ping")).toBe(1);
    expect((await scheduleOf(setup, schedule.id)).nextRunAt).toBeGreaterThan(Date.now());
  });

  it("missed due times coalesce into one run carrying the earliest, and a resumed schedule fires once", async () => {
    const setup = await laneSetup("schc");
    // Hourly, so that no due time passes while the test runs (the counts are exact).
    const schedule = await createSchedule(setup, { cron: "0 * * * *", prompt: "coalesced ping" });
    const missedSince = Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR;
    await dueNow(setup, schedule.id, missedSince);
    const [run] = await alarmUntilRuns(setup, schedule.id, 1);
    expect(run).toMatchObject({ dueAt: missedSince, coalesced: 5 });
    expect(run?.operationId).toBeDefined();
    await until("the settlement", () => settledStatus(setup, run?.operationId ?? ""), (status) => status !== undefined);

    // Paused across due times: nothing fires; resumed, one run for all of them.
    await call(`${setup.lanePath}/schedules/${schedule.id}`, { method: "PATCH", body: { paused: true }, token: setup.key });
    const pausedSince = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR - 1;
    await dueNow(setup, schedule.id, pausedSince);
    await alarm(setup);
    expect(await runsOf(setup, schedule.id)).toHaveLength(1);
    await call(`${setup.lanePath}/schedules/${schedule.id}`, { method: "PATCH", body: { paused: false }, token: setup.key });
    const runs = await alarmUntilRuns(setup, schedule.id, 2);
    expect(runs).toHaveLength(2);
    expect(runs[0]).toMatchObject({ dueAt: pausedSince, coalesced: 3 });
    expect(await promptsPlaced(setup, "coalesced ping")).toBe(2);
  });

  it("a busy lane under ifBusy reject records the due time skipped (lane_busy), with its webhook; enqueue runs it after", async () => {
    const setup = await laneSetup("schbz");
    const hooks = receiver("schbz");
    const endpoint = await register(setup.key, hooks.url("ok"), ["schedule.fired", "schedule.skipped"]);
    await useScript(setup, [slowStep(80), { text: "queued answer" }]);
    const busy = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "keep busy" }, token: setup.key });
    expect(busy.status).toBe(202);
    await untilAt(setup, "assistant.effect_pending");
    const rejecting = await createSchedule(setup, { id: "rej", everySeconds: 3600, prompt: "skipped ping" });
    const enqueuing = await createSchedule(setup, { id: "enq", everySeconds: 3600, prompt: "enqueued ping", ifBusy: "enqueue" });
    await dueNow(setup, rejecting.id);
    await dueNow(setup, enqueuing.id);
    await alarm(setup);
    const [skipped] = await runsOf(setup, rejecting.id);
    expect(skipped).toMatchObject({ skipped: "lane_busy" });
    expect(skipped).not.toHaveProperty("operationId");
    const [queued] = await runsOf(setup, enqueuing.id);
    expect(queued?.operationId).toBeDefined();
    await call(`${setup.lanePath}/abort`, { method: "POST", token: setup.key });
    expect(await until("the pending run", () => settledStatus(setup, queued?.operationId ?? ""), (status) => status !== undefined)).toBe("completed");
    const types = await until("the webhook events", () => deliveries(setup.key, endpoint.id), (items) => items.length >= 2);
    expect(types.map((delivery) => delivery.type).sort()).toEqual(["schedule.fired", "schedule.skipped"]);
  });

  it("a run the tenant's quota refuses is recorded skipped (quota), with its webhook", async () => {
    const setup = await laneSetup("schq");
    const endpoint = await register(setup.key, receiver("schq").url("ok"), ["schedule.skipped"]);
    const quota = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() });
    expect(quota.status).toBe(200);
    // Another lane's run holds the one slot.
    expect((await call(`${setup.sessionPath}/lanes/other`, { method: "PUT", token: setup.key })).status).toBe(201);
    await useScript({ ...setup, lanePath: `${setup.sessionPath}/lanes/other` }, [slowStep(80)]);
    expect((await call(`${setup.sessionPath}/lanes/other/operations`, { body: { kind: "prompt", prompt: "hold the slot" }, token: setup.key })).status).toBe(202);
    const schedule = await createSchedule(setup, { everySeconds: 3600, prompt: "over quota" });
    await dueNow(setup, schedule.id);
    await alarm(setup);
    // The object's own alarm (armed for the other lane's run) may be the one that fires the
    // schedule, while the test's alarm finds none left to run: wait for the record either way.
    const [run] = await until("the skipped run", () => runsOf(setup, schedule.id), (runs) => runs.length > 0);
    expect(run).toMatchObject({ skipped: "quota", detail: "maxOpenOperations" });
    const [delivery] = await until("the skip event", () => deliveries(setup.key, endpoint.id), (items) => items.length > 0);
    expect(delivery?.type).toBe("schedule.skipped");
    await call(`${setup.sessionPath}/lanes/other/abort`, { method: "POST", token: setup.key });
  });

  it("a run over the tenant's request quota is recorded skipped (quota, requestsPerMinute)", async () => {
    const setup = await laneSetup("schrq");
    const schedule = await createSchedule(setup, { everySeconds: 3600, prompt: "over the minute's quota" });
    // The setup's own requests used the minute's one request already.
    const quota = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1 }, token: adminToken() });
    expect(quota.status).toBe(200);
    await dueNow(setup, schedule.id);
    await alarm(setup);
    // Read in the object: the tenant's key is over its quota for the rest of the minute.
    const runs = await runInDurableObject(sessionObject(setup), (_instance: SessionObject, state) =>
      state.storage.sql.exec<{ skipped: string | null; detail: string | null; operation_id: string | null }>("SELECT skipped, detail, operation_id FROM schedule_runs WHERE schedule_id = ?", schedule.id).toArray(),
    );
    expect(runs).toEqual([{ skipped: "quota", detail: "requestsPerMinute", operation_id: null }]);
  });

  it("a firing the tenant object fails is tried again later for the same due time, not at once and not skipped", async () => {
    const setup = await laneSetup("schr");
    await register(setup.key, receiver("schr").url("ok"), ["schedule.fired"]);
    const schedule = await createSchedule(setup, { cron: "0 * * * *", prompt: "retried ping" });
    await until("the registration", () => indexedSchedules(setup), (rows) => rows.length === 1);
    const dueAt = Date.now() - 1_000;
    await dueNow(setup, schedule.id, dueAt);
    await breakTenant(setup.tenantId, true);
    await alarm(setup);
    await breakTenant(setup.tenantId, false);
    expect(await runsOf(setup, schedule.id)).toEqual([]);
    const state = await runInDurableObject(sessionObject(setup), async (_instance: SessionObject, storage) => ({
      alarm: await storage.storage.getAlarm(),
      row: storage.storage.sql.exec<{ next_run_at: number; retry_at: number | null }>("SELECT next_run_at, retry_at FROM schedules WHERE id = ?", schedule.id).one(),
    }));
    // Not armed for the past (a loop on the failure): for the retry, half a minute on.
    expect(state.row).toMatchObject({ next_run_at: dueAt, retry_at: expect.any(Number) });
    expect(state.alarm).toBeGreaterThan(Date.now() + 10_000);
    // The retry's time come (moved, not waited for): the same due time fires.
    await runInDurableObject(sessionObject(setup), (_instance: SessionObject, storage) => {
      storage.storage.sql.exec("UPDATE schedules SET retry_at = ? WHERE id = ?", Date.now() - 1, schedule.id);
    });
    await alarm(setup);
    expect(await runsOf(setup, schedule.id)).toEqual([expect.objectContaining({ dueAt, operationId: scheduledOperationId(schedule, dueAt) })]);
  });

  it("a session deleted while its schedule is due starts nothing, and leaves the index", async () => {
    const setup = await laneSetup("schdel");
    const schedule = await createSchedule(setup, { everySeconds: 60, prompt: "never" });
    await until("the registration", () => indexedSchedules(setup), (rows) => rows.length === 1);
    await runInDurableObject(sessionObject(setup), (_instance: SessionObject, state) => {
      state.storage.sql.exec("UPDATE schedules SET next_run_at = ? WHERE id = ?", Date.now() - 1_000, schedule.id);
    });
    expect((await call(setup.sessionPath, { method: "DELETE", token: setup.key })).status).toBe(204);
    await alarm(setup);
    await tick();
    expect(await indexedSchedules(setup)).toEqual([]);
    const open = await runInDurableObject(env.TENANTS.getByName(setup.tenantId), (_instance: TenantObject, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM open_operations").one().n);
    expect(open).toBe(0);
    expect((await call(setup.sessionPath, { token: setup.key })).status).toBe(404);
  });

  it("a schedule whose alarm was lost fires when the worker's own scheduled() runs, and its alarm is armed again", async () => {
    const setup = await laneSetup("schnet");
    const schedule = await createSchedule(setup, { cron: "* * * * *", prompt: "safety net" });
    await until("the registration", () => indexedSchedules(setup), (rows) => rows.length === 1);
    const dueAt = Date.now() - 2 * MINUTE;
    await runInDurableObject(sessionObject(setup), async (_instance: SessionObject, state) => {
      state.storage.sql.exec("UPDATE schedules SET next_run_at = ? WHERE id = ?", dueAt, schedule.id);
      await state.storage.deleteAlarm();
    });
    // The index saw it due then too (its row's check time is the due time it was registered with).
    await runInDurableObject(shardOfSession(setup), (_instance, state) => {
      state.storage.sql.exec("UPDATE schedules SET check_at = ? WHERE session = ?", dueAt, `${setup.tenantId}:${setup.sid}`);
    });
    await tick();
    const runs: ScheduleRun[] = await runsOf(setup, schedule.id);
    expect(runs).toEqual([expect.objectContaining({ dueAt, operationId: scheduledOperationId(schedule, dueAt) })]);
    const armed = await runInDurableObject(sessionObject(setup), (_instance: SessionObject, state) => state.storage.getAlarm());
    expect(armed).not.toBeNull();
    const [row] = await indexedSchedules(setup);
    expect(row?.check_at).toBeGreaterThan(Date.now());
    // A second tick finds nothing overdue: no second run.
    await tick();
    expect(await runsOf(setup, schedule.id)).toHaveLength(1);
  });
});
