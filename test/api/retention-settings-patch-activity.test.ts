import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { call, newTenant } from "./helpers.ts";

// docs/data.md "Retention": "A session is active when it is created, when one of its operations
// settles, and when it is changed by `PATCH /v1/sessions/{sid}` … A queued session that is active
// again before its turn leaves the queue and is kept." A PATCH of the settings alone is such a change.

const DAY_MS = 86_400_000;

const listed = async (key: string) => (await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>()).items.map((item) => item.id).sort();

describe("a settings-only PATCH is activity for retention", { timeout: 30_000 }, () => {
  it("takes a session queued by retention out of the queue: it is listed again and not deleted", async () => {
    const { tenantId, key } = await newTenant("sp_act");
    for (const sid of ["tuned", "other"]) expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    // The queue row a retention sweep writes (session-deletions.ts queueIdle), without arming the alarm.
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("INSERT INTO session_deletions (session_id, queued_at, idle_before) VALUES ('tuned', ?, ?)", Date.now(), Date.now() - 30 * DAY_MS);
    });
    expect(await listed(key)).toEqual(["other"]);

    const patched = await call("/v1/sessions/tuned", { method: "PATCH", body: { settings: { systemPrompt: "Be brief." } }, token: key });
    expect(patched.status).toBe(200);
    expect(await listed(key)).toEqual(["other", "tuned"]);
    await runDurableObjectAlarm(env.TENANTS.getByName(tenantId));
    expect((await call("/v1/sessions/tuned", { token: key })).status).toBe(200);
  });

  it("moves the session's recorded activity like any other PATCH", async () => {
    const { tenantId, key } = await newTenant("sp_act2");
    expect((await call("/v1/sessions", { body: { id: "s" }, token: key })).status).toBe(201);
    const old = Date.now() - 40 * DAY_MS;
    const recorded = () =>
      runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
        state.storage.sql.exec<{ last_active_at: number }>("SELECT last_active_at FROM sessions WHERE session_id = 's'").one().last_active_at,
      );
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE sessions SET last_active_at = ? WHERE session_id = 's'", old);
    });
    expect((await call("/v1/sessions/s", { method: "PATCH", body: { settings: { systemPrompt: "Be brief." } }, token: key })).status).toBe(200);
    expect(await recorded()).toBeGreaterThan(old);
  });
});
