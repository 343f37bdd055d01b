import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { sha256Hex } from "../../durable-objects/tenant/tenant-object.ts";
import { LEASE_MAX } from "../../durable-objects/tenant/quota-leases.ts";
import type { Usage } from "../../schema/usage.ts";
import { call, errorCode, newTenant } from "./helpers.ts";
import { pollCalls, recordCalls } from "./tenant-calls.ts";

// The prompt path's round trips to the tenant object: one call that authenticates and reserves the
// open-operation slot, and one (off the request's path) that frees the slot and adds the usage when
// the settlement is forwarded (tenant-calls.ts records them on the real TenantObject).

async function echoLane(key: string, sid: string): Promise<string> {
  expect((await call("/v1/sessions", { body: { id: sid }, token: key })).status).toBe(201);
  expect((await call(`/v1/sessions/${sid}/lanes/main`, { method: "PUT", token: key })).status).toBe(201);
  return `/v1/sessions/${sid}/lanes/main`;
}

describe("the tenant object's calls on the prompt path", () => {
  it("a session made from an agent never asks the tenant for its agent on a prompt: the same two calls", async () => {
    const { tenantId, key } = await newTenant("calls_agent");
    const tool = { kind: "http", description: "Looks up", parameters: { type: "object" }, url: "https://tools.example.com/lookup" };
    expect((await call("/v1/tools/lookup", { method: "PUT", body: tool, token: key })).status).toBe(201);
    const agent = { id: "bot", model: { provider: "scripted", modelId: "echo" }, settings: { systemPrompt: "Be brief." }, tools: { lookup: { kind: "tenant", tool: "lookup" } } };
    expect((await call("/v1/agents", { body: agent, token: key })).status).toBe(201);
    expect((await call("/v1/sessions", { body: { id: "s_calls_agent", agent: "bot" }, token: key })).status).toBe(201);
    const recorder = await recordCalls(tenantId);
    const response = await call("/v1/sessions/s_calls_agent/lanes/main/prompt", { body: { prompt: "hello" }, token: key });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "completed", agent: { id: "bot", version: 1 } });
    const seen = await pollCalls(recorder.read, (names) => names.includes("operationsSettled"));
    await recorder.stop();
    expect(seen).toEqual(["authorizeAndReserve", "operationsSettled"]);
  });

  it("a settled prompt costs one tenant call in the request and one settlement forward, which frees the slot and adds the usage", async () => {
    const { tenantId, key } = await newTenant("calls");
    const lane = await echoLane(key, "s_calls");
    const recorder = await recordCalls(tenantId);
    const response = await call(`${lane}/prompt`, { body: { prompt: "hello" }, token: key });
    expect(response.status).toBe(200);
    const seen = await pollCalls(recorder.read, (names) => names.includes("operationsSettled"));
    await recorder.stop();
    expect(seen).toEqual(["authorizeAndReserve", "operationsSettled"]);
    const state = await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, ctx) => ({
      open: ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM open_operations").one().n,
      tombstones: ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM released_operations").one().n,
    }));
    expect(state).toEqual({ open: 0, tombstones: 0 });
    const me = await call("/v1/me", { token: key });
    const { usage } = await me.json<{ usage: Usage }>();
    expect(usage.input + usage.output).toBeGreaterThan(0);
  });

  it("authorizeAndReserve reserves nothing for a key that is not the tenant's, nor over the request quota unless a lease paid", async () => {
    const { tenantId, key } = await newTenant("calls-deny");
    const tenant = env.TENANTS.getByName(tenantId);
    const wrong = await tenant.authorizeAndReserve(await sha256Hex(`${key}x`), "s", "main", LEASE_MAX);
    expect(wrong).toEqual({ authorization: null, reservation: { ok: false, openOperations: [] } });
    const quota = await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1 }, token: env.ADMIN_TOKEN });
    expect(quota.status).toBe(200);
    const hash = await sha256Hex(key);
    const first = await tenant.authorizeAndReserve(hash, "s", "main", LEASE_MAX);
    expect(first.authorization).toMatchObject({ limited: false, granted: 1 });
    expect(first.reservation.ok).toBe(true);
    const limited = await tenant.authorizeAndReserve(hash, "s", "main", LEASE_MAX);
    expect(limited.authorization).toMatchObject({ limited: true });
    expect(limited.reservation.ok).toBe(false);
    // A request paid from an isolate's lease asks for no quota (wanted 0): its key is checked and it reserves.
    const paid = await tenant.authorizeAndReserve(hash, "s", "main", 0);
    expect(paid.authorization).toMatchObject({ limited: false, granted: 0 });
    expect(paid.reservation.ok).toBe(true);
    // The granted slots are held in memory (their accepts are in flight), not written.
    expect(await tenant.openOperationCount()).toBe(2);
    const rows = await runInDurableObject(tenant, (_instance: TenantObject, ctx) => ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM open_operations").one().n);
    expect(rows).toBe(0);
  });

  it("a bad key on a prompt is 401 before a bad path or body, and a bad body is 400 with nothing reserved", async () => {
    const { tenantId, key } = await newTenant("calls-order");
    const lane = await echoLane(key, "s_order");
    const badKey = `${key.slice(0, -1)}${key.endsWith("A") ? "B" : "A"}`;
    expect(await errorCode(await call("/v1/sessions/bad$id/lanes/main/prompt", { body: { prompt: "x" }, token: badKey }))).toBe("Unauthenticated");
    expect(await errorCode(await call(`${lane}/prompt`, { body: { nope: 1 }, token: badKey }))).toBe("Unauthenticated");
    expect(await errorCode(await call("/v1/sessions/bad$id/lanes/main/prompt", { body: { prompt: "x" }, token: key }))).toBe("ValidationFailed");
    expect(await errorCode(await call(`${lane}/prompt`, { body: { nope: 1 }, token: key }))).toBe("ValidationFailed");
    const open = await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, ctx) => ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM open_operations").one().n);
    expect(open).toBe(0);
  });
});
