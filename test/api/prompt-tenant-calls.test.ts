import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { sha256Hex } from "../../durable-objects/tenant/tenant-object.ts";
import type { Usage } from "../../schema/usage.ts";
import { call, errorCode, newTenant } from "./helpers.ts";

// The prompt path's round trips to the tenant object: one call that authenticates and reserves the
// open-operation slot, and one (off the request's path) that frees the slot and adds the usage when
// the settlement is forwarded. The calls are observed on the real TenantObject instance, whose
// RPC methods are wrapped in place to record their names; nothing else changes.

const COUNTED = ["authorize", "reserveOperation", "authorizeAndReserve", "bindOperation", "releaseOperation", "operationsSettled", "agentForSession", "getAgent", "getAgentVersion"] as const;

/**
 * Records the calls the tenant object `tenantId` receives, by name, from now on. RPC dispatches only
 * prototype methods, so the wrappers sit on the class's prototype and record only this instance's
 * calls; `stop` puts the prototype back.
 */
async function recordCalls(tenantId: string): Promise<{ read: () => Promise<string[]>; stop: () => Promise<void> }> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => {
    const calls: string[] = [];
    const prototype: object = Object.getPrototypeOf(instance);
    const restore: (() => void)[] = [];
    for (const name of COUNTED) {
      const original: unknown = Reflect.get(prototype, name);
      if (typeof original !== "function") throw new Error(`TenantObject has no ${name}`);
      const own = Object.getOwnPropertyDescriptor(prototype, name);
      Reflect.set(prototype, name, function recorded(this: unknown, ...args: unknown[]) {
        if (this === instance) calls.push(name);
        return Reflect.apply(original, this, args);
      });
      restore.push(() => (own ? Object.defineProperty(prototype, name, own) : Reflect.deleteProperty(prototype, name)));
    }
    Reflect.set(instance, "recordedCalls", { calls, restore });
  });
  const recorded = (instance: TenantObject): { calls: string[]; restore: (() => void)[] } => Reflect.get(instance, "recordedCalls");
  return {
    read: () => runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => [...recorded(instance).calls]),
    stop: () => runInDurableObject(env.TENANTS.getByName(tenantId), (instance: TenantObject) => recorded(instance).restore.forEach((undo) => undo())),
  };
}

async function pollCalls(read: () => Promise<string[]>, done: (calls: string[]) => boolean): Promise<string[]> {
  let calls: string[] = [];
  for (let attempt = 0; attempt < 200; attempt++) {
    calls = await read();
    if (done(calls)) return calls;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return calls;
}

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

  it("authorizeAndReserve reserves nothing for a key that is not the tenant's, nor over the request quota", async () => {
    const { tenantId, key } = await newTenant("calls-deny");
    const tenant = env.TENANTS.getByName(tenantId);
    const wrong = await tenant.authorizeAndReserve(await sha256Hex(`${key}x`), "s", "main");
    expect(wrong).toEqual({ authorization: null, reservation: { ok: false, openOperations: [] } });
    const quota = await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { requestsPerMinute: 1 }, token: env.ADMIN_TOKEN });
    expect(quota.status).toBe(200);
    const hash = await sha256Hex(key);
    const first = await tenant.authorizeAndReserve(hash, "s", "main");
    expect(first.authorization).toMatchObject({ limited: false });
    expect(first.reservation.ok).toBe(true);
    const limited = await tenant.authorizeAndReserve(hash, "s", "main");
    expect(limited.authorization).toMatchObject({ limited: true });
    expect(limited.reservation.ok).toBe(false);
    // The granted slot is held in memory (its accept is in flight), not written.
    expect(await tenant.openOperationCount()).toBe(1);
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
