import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { adminToken, call, newTenant } from "./helpers.ts";
import { tick } from "./deferred-helpers.ts";
import { expectError } from "./session-helpers.ts";
import { eventually } from "./webhooks-helpers.ts";
import { laneSetup, slowStep, untilAt, useScript } from "./lane-helpers.ts";

// Issue 35 item 3 (API.md "Data lifecycle"): `sessionRetentionDays` deletes sessions idle longer
// than that, by the minute cron, asking only the tenants whose hourly sweep is due.

const DAY_MS = 86_400_000;

const quotas = (tenantId: string, body: unknown) => call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body, token: adminToken() });

/**
 * Moves a session's last activity `days` into the past in the tenant's index: retention counts
 * days, which a test cannot wait; this is the one value the sweep reads.
 */
function idleFor(tenantId: string, sid: string, days: number): Promise<void> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    state.storage.sql.exec("UPDATE sessions SET last_active_at = ? WHERE session_id = ?", Date.now() - days * DAY_MS, sid);
  });
}

/** Makes the tenant's sweep due again now (the directory sweeps each tenant at most hourly). */
function sweepDue(tenantId: string): Promise<void> {
  return runInDurableObject(env.TENANTS.getByName("admin:directory"), (_instance: TenantObject, state) => {
    state.storage.sql.exec("UPDATE tenant_directory SET retention_swept_at = 0 WHERE tenant_id = ?", tenantId);
  });
}

const status = async (key: string, sid: string) => (await call(`/v1/sessions/${sid}`, { token: key })).status;

describe("issue 35: session retention", { timeout: 30_000 }, () => {
  it("is an admin quota: 1..3650 days, null keeps sessions for ever", async () => {
    const { tenantId } = await newTenant("ret_bounds");
    expect(await (await call(`/v1/admin/tenants/${tenantId}/quotas`, { token: adminToken() })).json()).toMatchObject({ sessionRetentionDays: null });
    expect(await (await quotas(tenantId, { sessionRetentionDays: 30 })).json()).toMatchObject({ sessionRetentionDays: 30 });
    for (const bad of [0, 3651, 1.5, "30"]) await expectError(await quotas(tenantId, { sessionRetentionDays: bad }), 400, "ValidationFailed");
    expect(await (await quotas(tenantId, { sessionRetentionDays: null })).json()).toMatchObject({ sessionRetentionDays: null });
  });

  it("the cron deletes a session idle past the retention and keeps an active one; a tenant is swept at most hourly", async () => {
    const { tenantId, key } = await newTenant("ret_sweep");
    const unswept = await newTenant("ret_none");
    for (const sid of ["idle", "active", "patched", "later"]) expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    expect((await call("/v1/sessions", { body: { id: "old" }, token: unswept.key })).status).toBe(201);
    expect((await quotas(tenantId, { sessionRetentionDays: 30 })).status).toBe(200);

    await idleFor(tenantId, "idle", 31);
    await idleFor(tenantId, "active", 29);
    // A PATCH is activity: the session is no longer idle.
    await idleFor(tenantId, "patched", 31);
    expect((await call("/v1/sessions/patched", { method: "PATCH", body: { metadata: { seen: "yes" } }, token: key })).status).toBe(200);
    // A tenant without retention is never swept.
    await idleFor(unswept.tenantId, "old", 400);

    await tick();
    expect(await status(key, "idle")).toBe(404);
    expect(await status(key, "active")).toBe(200);
    expect(await status(key, "patched")).toBe(200);
    expect(await status(unswept.key, "old")).toBe(200);

    // Swept within the hour: the next tick does not ask this tenant again.
    await idleFor(tenantId, "later", 31);
    await tick();
    expect(await status(key, "later")).toBe(200);
    await sweepDue(tenantId);
    await tick();
    expect(await status(key, "later")).toBe(404);
    const listing = await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>();
    expect(listing.items.map((item) => item.id).sort()).toEqual(["active", "patched"]);
  });
});

describe("issue 35: a session queued by retention that is active again before its turn", { timeout: 30_000 }, () => {
  it("leaves the queue and is kept, while a session deleted by metadata is not spared by activity", async () => {
    const { tenantId, key } = await newTenant("ret_again");
    for (const sid of ["revived", "asked"]) expect((await call("/v1/sessions", { body: { id: sid, metadata: { kind: sid } }, token: key })).status).toBe(201);
    // The queue row a retention sweep writes (session-deletions.ts queueIdle), written here
    // without arming the alarm: a sweep deletes a first batch at once, so its turn never waits.
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("INSERT INTO session_deletions (session_id, queued_at, idle_before) VALUES ('revived', ?, ?)", Date.now(), Date.now() - 30 * DAY_MS);
    });
    const listed = async () => (await (await call("/v1/sessions", { token: key })).json<{ items: { id: string }[] }>()).items.map((item) => item.id).sort();
    expect(await listed()).toEqual(["asked"]);

    expect((await call("/v1/sessions/revived", { method: "PATCH", body: { name: "back" }, token: key })).status).toBe(200);
    expect(await listed()).toEqual(["asked", "revived"]);
    await runDurableObjectAlarm(env.TENANTS.getByName(tenantId));
    expect(await status(key, "revived")).toBe(200);

    // A deletion asked for is not undone by activity.
    expect(await (await call("/v1/sessions?metadata.kind=asked", { method: "DELETE", token: key })).json()).toEqual({ matched: 1 });
    await call("/v1/sessions/asked", { method: "PATCH", body: { name: "still going" }, token: key });
    await runDurableObjectAlarm(env.TENANTS.getByName(tenantId));
    await eventually(async () => ((await status(key, "asked")) === 404 ? true : undefined), "the asked deletion");
    expect(await listed()).toEqual(["revived"]);
  });

  it("a session retention queued and then deleted by metadata is deleted, whatever activity follows", async () => {
    const { tenantId, key } = await newTenant("ret_both");
    expect((await call("/v1/sessions", { body: { id: "both", metadata: { user: "gone" } }, token: key })).status).toBe(201);
    await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("INSERT INTO session_deletions (session_id, queued_at, idle_before) VALUES ('both', ?, ?)", Date.now(), Date.now() - 30 * DAY_MS);
    });
    // Already hidden (queued), so the deletion matches nothing still listed; it is now asked for all the same.
    expect(await (await call("/v1/sessions?metadata.user=gone", { method: "DELETE", token: key })).json()).toEqual({ matched: 0 });
    await call("/v1/sessions/both", { method: "PATCH", body: { name: "still going" }, token: key });
    await runDurableObjectAlarm(env.TENANTS.getByName(tenantId));
    await eventually(async () => ((await status(key, "both")) === 404 ? true : undefined), "the asked deletion");
  });
});

describe("activity recorded at most once an hour (two rows written per settled turn otherwise)", { timeout: 30_000 }, () => {
  const recorded = (tenantId: string, sid: string) =>
    runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
      state.storage.sql.exec<{ at: number }>("SELECT last_active_at AS at FROM sessions WHERE session_id = ?", sid).one().at,
    );

  it("moves a session's activity only when it is an hour old, and never deletes a session before its retention", async () => {
    const { tenantId, key } = await newTenant("ret_step");
    for (const sid of ["recent", "hour", "edge", "past"]) expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
    const patch = async (sid: string) => expect((await call(`/v1/sessions/${sid}`, { method: "PATCH", body: { metadata: { seen: "yes" } }, token: key })).status).toBe(200);
    // Active 15 minutes ago: a new activity writes nothing; two hours ago: it is recorded.
    await idleFor(tenantId, "recent", 15 / 1440);
    const before = await recorded(tenantId, "recent");
    await patch("recent");
    expect(await recorded(tenantId, "recent")).toBe(before);
    await idleFor(tenantId, "hour", 2 / 24);
    const stamp = Date.now();
    await patch("hour");
    expect(await recorded(tenantId, "hour")).toBeGreaterThanOrEqual(stamp);
    // The recorded activity may be up to an hour behind the latest: under a 30-day retention, a
    // session recorded 30 days and 30 minutes ago may have been active since and is kept; one
    // recorded 30 days and 2 hours ago is deleted.
    expect((await quotas(tenantId, { sessionRetentionDays: 30 })).status).toBe(200);
    await idleFor(tenantId, "edge", 30 + 30 / 1440);
    await idleFor(tenantId, "past", 30 + 2 / 24);
    await tick();
    expect(await status(key, "edge")).toBe(200);
    expect(await status(key, "past")).toBe(404);
  });
  it("spares a session with a run open, whether the run began before the sweep or after it queued the session", async () => {
    const setup = await laneSetup("retopen");
    expect((await quotas(setup.tenantId, { sessionRetentionDays: 1 })).status).toBe(200);
    await idleFor(setup.tenantId, setup.sid, 3);
    // The end user comes back after days and prompts: a run is open on the session.
    await useScript(setup, [slowStep(200)]);
    expect((await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "are you there?" }, token: setup.key })).status).toBe(202);
    await untilAt(setup, "assistant.effect_pending");
    const tenant = env.TENANTS.getByName(setup.tenantId);
    expect(await tenant.openOperationCount()).toBeGreaterThan(0);
    expect(await tenant.sweepRetention(Date.now())).toEqual({ queued: 0 });
    expect((await call(setup.sessionPath, { token: setup.key })).status).toBe(200);

    // Queued as idle before the run was accepted: at its turn it is looked at again, and spared.
    await runInDurableObject(tenant, (_instance: TenantObject, state) => {
      state.storage.sql.exec("INSERT INTO session_deletions (session_id, queued_at, idle_before) VALUES (?, ?, ?)", setup.sid, Date.now(), Date.now());
    });
    // The sweep deletes a first batch at once (the alarm the rest): the queued session's turn.
    await tenant.sweepRetention(Date.now());
    expect((await call(setup.sessionPath, { token: setup.key })).status).toBe(200);
    const left = await runInDurableObject(tenant, (_instance: TenantObject, state) => state.storage.sql.exec("SELECT count(*) AS n FROM session_deletions").one().n);
    expect(left).toBe(0);
  });
});
