import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { alarm, createSchedule, dueNow, runsOf } from "./schedule-helpers.ts";

// A tenant being deleted starts nothing new (docs/data.md): its keys are refused at once, and its
// sessions' schedules start no run while the sessions wait for their turn to be deleted.

function markDeleting(tenantId: string, deleting: boolean): Promise<void> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    state.storage.sql.exec("UPDATE tenant SET deleting_at = ? WHERE singleton = 1", deleting ? Date.now() : null);
  });
}

describe("schedules of a tenant being deleted", { timeout: 60_000 }, () => {
  it("a due time reached while the tenant is being deleted is recorded refused (TenantDeleting) and starts no run", async () => {
    const setup = await laneSetup("schdel");
    const schedule = await createSchedule(setup, { at: Date.now() + 3_600_000, prompt: "never while deleting" });
    // The deletion's mark alone (its background batches would delete the session under the test).
    await markDeleting(setup.tenantId, true);
    await dueNow(setup, schedule.id);
    await alarm(setup);
    const open = await env.TENANTS.getByName(setup.tenantId).openOperationCount();
    await markDeleting(setup.tenantId, false);
    expect(open).toBe(0);
    expect(await runsOf(setup, schedule.id)).toEqual([expect.objectContaining({ skipped: "refused", detail: "TenantDeleting" })]);
    const { snapshot } = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: { transcript: unknown[]; operation: unknown } }>();
    expect([snapshot.transcript, snapshot.operation]).toEqual([[], null]);
  });
});
