import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { adminToken, call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { eventually } from "./webhooks-helpers.ts";

// `DELETE /v1/admin/tenants/{id}` deletes every session in the background, then the tenant
// (docs/data.md "A whole tenant"). A session the retention sweep had queued before is queued again
// for good: activity that would spare it from retention must not spare it from its tenant's end.

const DAY_MS = 86_400_000;
const admin = (path: string, method = "GET") => call(`/v1/admin${path}`, { method, token: adminToken() });

function holdsStorage(tenantId: string, sid: string): Promise<boolean> {
  return runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) =>
    state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'").toArray().length > 0,
  );
}

describe("deleting a tenant deletes every session", { timeout: 90_000 }, () => {
  it("a session the retention sweep had queued, active again after the DELETE, is still deleted with its tenant", async () => {
    const setup = await laneSetup("radm_del");
    const { tenantId, key, sid, lanePath } = setup;
    await useScript(setup, [{ text: "answered after the tenant's deletion began", delayMs: 2_000 }]);
    // The queue row a retention sweep writes for an idle session whose turn has not come yet
    // (session-deletions.ts queueIdle; written directly, as session-retention.test.ts does).
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("INSERT INTO session_deletions (session_id, queued_at, idle_before) VALUES (?, ?, ?)", sid, Date.now(), Date.now() - 30 * DAY_MS);
    });
    // The end user comes back: a run starts (202, still running when the operator deletes the tenant).
    const accepted = await call(`${lanePath}/prompt`, { body: { prompt: "still there?", wait: 0 }, token: key });
    expect(accepted.status).toBe(202);

    // The operator deletes the whole tenant: every session is to be deleted.
    const deleted = await admin(`/tenants/${tenantId}`, "DELETE");
    expect(deleted.status).toBe(202);
    expect(await deleted.json()).toMatchObject({ status: "deleting", deletion: { sessionsTotal: 1 } });

    // Let the run settle (its forward is activity for the retention queue row), then skip the grace.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const tenant = env.TENANTS.getByName(tenantId);
    await runInDurableObject(tenant, (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE tenant SET deleting_at = deleting_at - 60000");
    });
    await eventually(async () => {
      await runDurableObjectAlarm(tenant);
      return (await admin(`/tenants/${tenantId}`)).status === 404 ? true : undefined;
    }, "the tenant's deletion to complete");

    // The tenant is gone (404, id reserved); none of its sessions may be left behind.
    expect(await holdsStorage(tenantId, sid)).toBe(false);
  });
});
