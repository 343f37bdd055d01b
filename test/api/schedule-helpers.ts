import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { DeferredIndex } from "../../durable-objects/deferred-index/deferred-index.ts";
import { shardOf } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import type { Schedule, ScheduleRun } from "../../schema/schedules.ts";
import { call } from "./helpers.ts";

/** Creates a schedule on the setup's lane and answers it (201 expected). */
export async function createSchedule(setup: { key: string; lanePath: string }, body: Record<string, unknown>): Promise<Schedule> {
  const response = await call(`${setup.lanePath}/schedules`, { body, token: setup.key });
  expect(response.status, await response.clone().text()).toBe(201);
  return response.json<Schedule>();
}

export function sessionObject(setup: { tenantId: string; sid: string }) {
  return env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
}

/**
 * Moves a schedule's stored due time to `dueAt` (in the past), as if the time had come: a test
 * cannot wait a minute for a cron's next due time, so it moves the stored due time instead of the
 * clock. The alarm is armed a minute ahead, so that it fires only when the test runs it (`alarm`).
 */
export async function dueNow(setup: { tenantId: string; sid: string }, scheduleId: string, dueAt = Date.now() - 1_000): Promise<void> {
  await runInDurableObject(sessionObject(setup), async (_instance, state) => {
    state.storage.sql.exec("UPDATE schedules SET next_run_at = ? WHERE id = ?", dueAt, scheduleId);
    await state.storage.setAlarm(Date.now() + 60_000);
  });
}

/** Runs the session's alarm now (the real alarm handler). */
export function alarm(setup: { tenantId: string; sid: string }): Promise<boolean> {
  return runDurableObjectAlarm(sessionObject(setup));
}

/**
 * Runs the session's alarm until the schedule has `count` runs recorded. The runtime cancels an
 * alarm handler whose alarm is set again while it starts (the session re-arms after its own
 * background work, such as a forward of the new schedule), so one run of the alarm may fire nothing.
 */
export async function alarmUntilRuns(setup: { tenantId: string; sid: string; key: string; lanePath: string }, scheduleId: string, count: number): Promise<ScheduleRun[]> {
  return until(`${count} runs of ${scheduleId}`, async () => {
    await alarm(setup);
    return runsOf(setup, scheduleId);
  }, (runs) => runs.length >= count);
}

export async function runsOf(setup: { key: string; lanePath: string }, scheduleId: string): Promise<ScheduleRun[]> {
  const response = await call(`${setup.lanePath}/schedules/${scheduleId}/runs?limit=1000`, { token: setup.key });
  expect(response.status).toBe(200);
  return (await response.json<{ items: ScheduleRun[] }>()).items;
}

export async function scheduleOf(setup: { key: string; lanePath: string }, scheduleId: string): Promise<Schedule> {
  const response = await call(`${setup.lanePath}/schedules/${scheduleId}`, { token: setup.key });
  expect(response.status).toBe(200);
  return response.json<Schedule>();
}

export function shardOfSession(setup: { tenantId: string; sid: string }): DurableObjectStub<DeferredIndex> {
  return env.DEFERRED_INDEX.getByName(shardOf(`${setup.tenantId}:${setup.sid}`));
}

/** The schedule rows the session's shard holds for it (read in the shard itself). */
export function indexedSchedules(setup: { tenantId: string; sid: string }): Promise<{ schedule_id: string; check_at: number | null }[]> {
  return runInDurableObject(shardOfSession(setup), (_instance: DeferredIndex, state) => {
    const exists = state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schedules'").toArray().length > 0;
    if (!exists) return [];
    return state.storage.sql
      .exec<{ schedule_id: string; check_at: number | null }>("SELECT schedule_id, check_at FROM schedules WHERE session = ? ORDER BY schedule_id", `${setup.tenantId}:${setup.sid}`)
      .toArray();
  });
}

/** Polls (bounded, no timing assertion) until `read` answers something `done` accepts. */
export async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, tries = 200): Promise<T> {
  for (let attempt = 0; attempt < tries; attempt++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}
