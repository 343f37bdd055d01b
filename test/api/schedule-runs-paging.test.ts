import { describe, expect, it } from "vitest";
import { createClient } from "../../client/index.ts";
import { exports } from "cloudflare:workers";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { createSchedule, runsOf, until } from "./schedule-helpers.ts";

// docs/api-sessions.md "Paging" (and docs/api-tenants.md): `nextCursor` is opaque and `null` on
// the last page; every other listing asks for `limit + 1` rows to know whether more exist.
// docs/schedules.md: `GET …/schedules/{id}/runs?limit=&cursor=` → `{ items: [Run], nextCursor }`.
// A schedule whose runs fill the page exactly ends with `null`, not a cursor to an empty page.

describe("schedule runs: paging", { timeout: 30_000 }, () => {
  it("a page holding the last run (exactly `limit` of them) ends the listing with nextCursor null", async () => {
    const setup = await laneSetup("rv_runs");
    const schedule = await createSchedule(setup, { at: Date.now() - 1_000, prompt: "one-off" });
    await until("the run", () => runsOf(setup, schedule.id), (runs) => runs.length > 0);

    const response = await call(`${setup.lanePath}/schedules/${schedule.id}/runs?limit=1`, { token: setup.key });
    const page = await response.json<{ items: unknown[]; nextCursor: string | null }>();
    expect(page.items).toHaveLength(1);
    expect(page.nextCursor).toBeNull();
  });

  it("the SDK's schedules.runs page of the only run says there is no next page", async () => {
    const setup = await laneSetup("rv_runs_sdk");
    const client = createClient({ baseUrl: "http://api.test", key: setup.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const schedule = await client.schedules.create(setup.sid, "main", { at: Date.now() - 1_000, prompt: "one-off" });
    await until("the run", () => runsOf(setup, schedule.id), (runs) => runs.length > 0);
    const page = await client.schedules.runs(setup.sid, "main", schedule.id, { limit: 1 });
    expect(page).toEqual({ items: [expect.objectContaining({ operationId: expect.any(String) })], nextCursor: null });
  });
});
