import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../../client/index.ts";
import { laneSetup } from "../api/lane-helpers.ts";
import { until } from "../api/schedule-helpers.ts";

// The SDK's schedules against the real app in workerd: create, list, pause, resume, runs of a
// one-off that fires, the tenant-wide listing, deletion.

describe("client SDK: schedules", { timeout: 30_000 }, () => {
  it("creates, lists, pauses, resumes, reads runs and deletes a lane's schedules", async () => {
    const setup = await laneSetup("sdk_sched");
    const client = createClient({ baseUrl: "http://api.test/", key: setup.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const daily = await client.schedules.create(setup.sid, "main", { id: "daily", cron: "30 8 * * 1-5", timezone: "America/New_York", prompt: "Standup notes" });
    expect(daily).toMatchObject({ id: "daily", cron: "30 8 * * 1-5", timezone: "America/New_York", paused: false });
    expect(await client.schedules.pause(setup.sid, "main", "daily")).toMatchObject({ paused: true, nextRunAt: null });
    expect(await client.schedules.resume(setup.sid, "main", "daily")).toMatchObject({ paused: false, nextRunAt: daily.nextRunAt });
    const once = await client.schedules.create(setup.sid, "main", { id: "once", at: Date.now() - 1, prompt: "Right now" });
    expect((await client.schedules.list(setup.sid, "main")).map((schedule) => schedule.id)).toEqual(["daily", "once"]);
    const runs = await until("the one-off's run", () => client.schedules.runs(setup.sid, "main", once.id), (page) => page.items.length > 0);
    expect(runs.items[0]?.operationId).toBeDefined();
    const listed = await until("the index", async () => {
      const seen = [];
      for await (const schedule of client.schedules.all({ limit: 1 })) seen.push(schedule.id);
      return seen;
    }, (seen) => seen.length === 2);
    expect(listed).toEqual(["daily", "once"]);
    await client.schedules.delete(setup.sid, "main", "daily");
    const missing = await client.schedules.get(setup.sid, "main", "daily").catch((error: unknown) => error);
    expect(isApiError(missing) && missing.code).toBe("ScheduleNotFound");
  });
});
