import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { TENANT_MIGRATIONS } from "../../durable-objects/tenant/tenant-migrations.ts";
import type { Usage } from "../../schema/usage.ts";
import { rerunMigration } from "../helpers/storage.ts";
import { adminToken, call, newTenant } from "./helpers.ts";

// The tenant's concurrent open operations quota (maxOpenOperations) and usage totals at /v1/me,
// through the real Hono app with the scripted models. No timing assertions: a slow scripted step
// only keeps the first operation open while the test acts; asynchronous forwards are polled
// within a bound.

let counter = 0;

async function setQuota(tenantId: string, maxOpenOperations: number): Promise<void> {
  const response = await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations }, token: adminToken() });
  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject({ maxOpenOperations });
}

/** A session of the tenant with the lane `main`. */
async function session(key: string): Promise<{ sid: string; lanePath: string }> {
  const sid = `s_quota_${(counter++).toString(36)}`;
  expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
  expect((await call(`/v1/sessions/${sid}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
  return { sid, lanePath: `/v1/sessions/${sid}/lanes/main` };
}

/** Switches the lane to `scripted/script` with one slowly streamed step. */
async function slowScript(key: string, target: { sid: string; lanePath: string }): Promise<void> {
  const text = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
  expect((await call(`/v1/sessions/${target.sid}/lists/scripted/steps`, { body: { text, chunkMs: 50 }, token: key })).status).toBe(201);
  const patched = await call(`${target.lanePath}/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "script" } }, token: key });
  expect(patched.status).toBe(200);
}

async function accept(key: string, lanePath: string, prompt: string): Promise<Response> {
  return call(`${lanePath}/operations`, { body: { kind: "prompt", prompt }, token: key });
}

/** Rows of the tenant's open-operations ledger. */
async function openRows(tenantId: string): Promise<number> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
    state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM open_operations").one().n,
  );
}

async function usageOf(key: string): Promise<Usage> {
  const response = await call("/v1/me", { token: key });
  expect(response.status).toBe(200);
  return (await response.json<{ usage: Usage }>()).usage;
}

describe("maxOpenOperations", () => {
  it("defaults to 50 and is settable through PATCH quotas", async () => {
    const { tenantId } = await newTenant("qdef");
    const quotas = await call(`/v1/admin/tenants/${tenantId}/quotas`, { token: adminToken() });
    expect(await quotas.json()).toMatchObject({ maxOpenOperations: 50 });
    await setQuota(tenantId, 3);
    const bad = await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 0 }, token: adminToken() });
    expect(bad.status).toBe(400);
  });

  it("refuses a second concurrent operation with 429, and accepts again once the first settles", async () => {
    const { tenantId, key } = await newTenant("qopen");
    await setQuota(tenantId, 1);
    const slow = await session(key);
    const other = await session(key);
    await slowScript(key, slow);

    const first = await accept(key, slow.lanePath, "slow one");
    expect(first.status).toBe(202);
    const { operationId } = await first.json<{ operationId: string }>();

    const refused = await accept(key, other.lanePath, "too many");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    const body = await refused.json<{ error: { code: string; details?: Record<string, unknown> } }>();
    expect(body.error.code).toBe("RateLimited");
    expect(body.error.details).toMatchObject({ quota: "maxOpenOperations" });
    // The prompt convenience is governed by the same quota.
    expect((await call(`${other.lanePath}/prompt`, { body: { prompt: "also too many", wait: 1 }, token: key })).status).toBe(429);

    const settled = await call(`${slow.lanePath}/operations/${operationId}?wait=30`, { token: key });
    expect(await settled.json()).toMatchObject({ state: "settled" });
    // The session releases the slot itself when the operation settles (fire and forget: polled).
    let open = await openRows(tenantId);
    for (let i = 0; i < 200 && open > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      open = await openRows(tenantId);
    }
    expect(open).toBe(0);

    const again = await call(`${other.lanePath}/prompt`, { body: { prompt: "now there is room", wait: 10 }, token: key });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ status: "completed" });
    // Settled operations free their slots: one more still fits. (The settled prompt's release is
    // told to the tenant after its commit, off the answer's path: wait for it, as above.)
    let taken = await env.TENANTS.getByName(tenantId).openOperationCount();
    for (let i = 0; i < 200 && taken > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      taken = await env.TENANTS.getByName(tenantId).openOperationCount();
    }
    expect(taken).toBe(0);
    expect((await accept(key, other.lanePath, "and another")).status).toBe(202);
  });

  it("a refused accept on a missing session releases its reservation", async () => {
    const { tenantId, key } = await newTenant("qfail");
    await setQuota(tenantId, 1);
    expect((await accept(key, "/v1/sessions/s_missing/lanes/main", "nobody")).status).toBe(404);
    const target = await session(key);
    expect((await accept(key, `/v1/sessions/${target.sid}/lanes/nolane`, "no lane")).status).toBe(404);
    expect((await accept(key, target.lanePath, "fits")).status).toBe(202);
  });

  it("heals a lost release: an open row for an operation its session does not know is dropped", async () => {
    const { tenantId, key } = await newTenant("qheal");
    await setQuota(tenantId, 1);
    const target = await session(key);
    const tenant = env.TENANTS.getByName(tenantId);
    const reserved = await tenant.reserveOperation(target.sid, "main");
    if (!reserved.ok) throw new Error("the first reservation must fit");
    await tenant.bindOperation(reserved.reservationId, uuidv7Ids.next());

    const response = await call(`${target.lanePath}/prompt`, { body: { prompt: "after the heal", wait: 10 }, token: key });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "completed" });
  });
});

describe("reservations of accepts in flight", () => {
  it("are held in memory and written only when bound: a prompt settled in its request writes no slot row", async () => {
    const { tenantId, key } = await newTenant("qmem");
    await setQuota(tenantId, 1);
    const tenant = env.TENANTS.getByName(tenantId);
    const target = await session(key);

    // Granted without a write; the quota counts it: a second accept is refused meanwhile.
    const held = await tenant.reserveOperation(target.sid, "main");
    if (!held.ok) throw new Error("the first reservation must fit");
    expect(await openRows(tenantId)).toBe(0);
    expect(await tenant.openOperationCount()).toBe(1);
    expect((await tenant.reserveOperation(target.sid, "main")).ok).toBe(false);
    // Bound (its operation outlived the request): written under the operation's id, and kept across a restart.
    const operationId = uuidv7Ids.next();
    await tenant.bindOperation(held.reservationId, operationId);
    const rows = () =>
      runInDurableObject(tenant, (_instance: TenantObject, state) => state.storage.sql.exec<{ operation_id: string; bound: number }>("SELECT operation_id, bound FROM open_operations").toArray());
    expect(await rows()).toEqual([{ operation_id: operationId, bound: 1 }]);
    await evictDurableObject(tenant);
    expect(await tenant.openOperationCount()).toBe(1);
    await tenant.releaseOperation(target.sid, operationId);
    expect(await tenant.openOperationCount()).toBe(0);

    // A prompt that settles within its request: its slot is freed by the settlement forward, never written.
    const prompted = await call(`${target.lanePath}/prompt`, { body: { prompt: "quick" }, token: key });
    expect(await prompted.json()).toMatchObject({ status: "completed" });
    let open = await tenant.openOperationCount();
    for (let i = 0; i < 200 && open > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      open = await tenant.openOperationCount();
    }
    expect(open).toBe(0);
    const tombstones = await runInDurableObject(tenant, (_instance: TenantObject, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM released_operations").one().n);
    expect({ rows: await openRows(tenantId), tombstones }).toEqual({ rows: 0, tombstones: 0 });
  });

  it("a restart of the tenant object forgets the accepts in flight (the documented trade-off), never a bound operation", async () => {
    const { tenantId } = await newTenant("qforget");
    await setQuota(tenantId, 2);
    const tenant = env.TENANTS.getByName(tenantId);
    const bound = await tenant.reserveOperation("s", "main");
    const inFlight = await tenant.reserveOperation("s", "side");
    if (!bound.ok || !inFlight.ok) throw new Error("both reservations must fit");
    await tenant.bindOperation(bound.reservationId, uuidv7Ids.next());
    expect(await tenant.openOperationCount()).toBe(2);
    await evictDurableObject(tenant);
    expect(await tenant.openOperationCount()).toBe(1);
    // A bind of the forgotten reservation (its accept answered after the restart) writes nothing.
    await tenant.bindOperation(inFlight.reservationId, uuidv7Ids.next());
    expect(await tenant.openOperationCount()).toBe(1);
  });

  it("migration 10 drops the unbound rows an earlier build wrote for accepts in flight; bound ones stay", async () => {
    const { tenantId } = await newTenant("qmigrate");
    const tenant = env.TENANTS.getByName(tenantId);
    const operationId = uuidv7Ids.next();
    const left = await runInDurableObject(tenant, (_instance: TenantObject, state) => {
      // The rows as an earlier build left them: one reservation still unbound, one bound.
      const insert = "INSERT INTO open_operations (operation_id, session_id, lane, reserved_at, bound) VALUES (?, 's', 'main', ?, ?)";
      state.storage.sql.exec(insert, "rsv_earlier", Date.now(), 0);
      state.storage.sql.exec(insert, operationId, Date.now(), 1);
      rerunMigration(state.storage, TENANT_MIGRATIONS, "reservations_in_memory");
      return state.storage.sql.exec<{ operation_id: string }>("SELECT operation_id FROM open_operations").toArray().map((row) => row.operation_id);
    });
    expect(left).toEqual([operationId]);
    expect(await tenant.openOperationCount()).toBe(1);
  });
});

describe("usage totals", () => {
  it("GET /v1/me reports the tenant's usage, growing after a run", async () => {
    const { key } = await newTenant("qusage");
    const before = await usageOf(key);
    expect(before).toMatchObject({ input: 0, output: 0, totalTokens: 0 });
    const target = await session(key);
    const run = await call(`${target.lanePath}/prompt`, { body: { prompt: "count these tokens please", wait: 10 }, token: key });
    expect(run.status).toBe(200);

    // The forward is asynchronous (fire and forget after the commit): poll, bounded.
    let after = before;
    for (let i = 0; i < 200 && after.totalTokens === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      after = await usageOf(key);
    }
    expect(after.totalTokens).toBeGreaterThan(0);
    expect(after.input).toBeGreaterThan(0);
    const ledger = await call(`/v1/sessions/${target.sid}/usage`, { token: key });
    const { totals } = await ledger.json<{ totals: Usage }>();
    expect(after).toEqual(totals);
  });
});
