import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { adminToken, call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";

// The compact (and navigate) convenience starts a continuation run when queued input is eligible
// (docs/api-lanes.md). That run is an operation of its own and holds an open-operation slot while
// it is open, as every run does (docs/api-tenants.md "Open operations quota"): the compaction's
// slot, handed on, else the lane's held slot, else one reserved. Before, it held none: with
// maxOpenOperations 1 a second run was admitted while it was open, and the ledger (`status=active`)
// did not know the session was busy.

describe("the continuation run of the compact convenience", () => {
  it("holds an open-operation slot while it is open", { timeout: 60_000 }, async () => {
    const setup = await laneSetup("contslot");
    const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
    expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
    for (const prompt of ["one", "two"]) expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);
    // The compaction's summary, then a continuation run that suspends on a deferred answer (open for long).
    await useScript(setup, [{ text: "the summary" }, { deferred: { pollAfterMs: 600_000, ready: { text: "much later" } } }]);
    const deferredOn = await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings: { streamOptions: { deferred: true } } }, token: setup.key });
    expect(deferredOn.status).toBe(200);
    const quota = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() });
    expect(quota.status).toBe(200);
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "followUp", message: "and then?" }, token: setup.key })).status).toBe(201);

    // The turns' slots came back (their forwards follow the answers).
    await expect.poll(() => env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(0);
    const compacted = await call(`${setup.lanePath}/compact`, { body: { wait: 30 }, token: setup.key });
    expect(compacted.status, await compacted.clone().text()).toBe(200);
    const body = await compacted.json<{ compaction: { status: string }; run?: { status?: string; operationId: string } }>();
    expect(body.compaction).toMatchObject({ status: "completed" });
    expect(body.run, JSON.stringify(body)).toMatchObject({ status: "suspended" });
    const continuation = body.run!.operationId;
    const view = await (await call(`${setup.lanePath}/operations/${continuation}`, { token: setup.key })).json<{ state: string; at?: string }>();
    expect(view).toMatchObject({ state: "active", at: "deferred.suspended" });

    // The continuation run is open: the tenant's one slot is taken, and a run on another session
    // is past the quota.
    const other = "s_contslot_other";
    expect((await call("/v1/sessions", { body: { id: other }, token: setup.key })).status).toBe(201);
    expect((await call(`/v1/sessions/${other}/lanes/main`, { method: "PUT", token: setup.key })).status).toBe(201);
    const second = await call(`/v1/sessions/${other}/lanes/main/prompt`, { body: { prompt: "over the quota?" }, token: setup.key });
    expect(second.status).toBe(429);
    // The ledger knows the session is busy.
    expect(await env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(1);
    const listed = await (await call("/v1/sessions?status=active", { token: setup.key })).json<{ items: { id: string }[] }>();
    expect(listed.items.map((item) => item.id)).toContain(setup.sid);
  });

  it("runs on the compaction's own slot when the quota is one (no other slot is free)", { timeout: 60_000 }, async () => {
    const setup = await laneSetup("contslot1");
    expect((await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() })).status).toBe(200);
    const settings = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } };
    expect((await call(`/v1/sessions/${setup.sid}`, { method: "PATCH", body: { settings }, token: setup.key })).status).toBe(200);
    for (const prompt of ["one", "two"]) {
      await expect.poll(() => env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(0);
      expect((await call(`${setup.lanePath}/prompt`, { body: { prompt }, token: setup.key })).status).toBe(200);
    }
    await useScript(setup, [{ text: "the summary" }, { text: "the continuation" }]);
    expect((await call(`${setup.lanePath}/queue`, { body: { kind: "followUp", message: "and then?" }, token: setup.key })).status).toBe(201);
    await expect.poll(() => env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(0);
    const compacted = await call(`${setup.lanePath}/compact`, { body: { wait: 30 }, token: setup.key });
    expect(compacted.status, await compacted.clone().text()).toBe(200);
    const body = await compacted.json<{ compaction: { status: string }; run?: { status?: string } }>();
    expect(body).toMatchObject({ compaction: { status: "completed" }, run: { status: "completed" } });
    await expect.poll(() => env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(0);
  });
});
