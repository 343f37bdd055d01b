import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { adminToken, call, errorCode } from "./helpers.ts";
import { laneSetup, slowStep, untilHeld, useScript } from "./lane-helpers.ts";
import { pollCalls, recordCalls, warmCalls } from "./tenant-calls.ts";

// The open-operation slot a session holds ahead for each lane (durable-objects/session/held-slots.ts):
// granted with the settlement forward, taken by the lane's next POST …/prompt on a warm isolate, so
// that prompt makes no tenant-object call on its path; never an open operation by itself, and it
// gives way to an operation that needs the quota.

const settledForwards = (calls: string[]) => calls.filter((name) => name === "operationsSettled").length;

async function prompt(setup: { key: string; lanePath: string }, body: Record<string, unknown> = { prompt: "hello" }): Promise<Response> {
  return call(`${setup.lanePath}/prompt`, { body, token: setup.key });
}

/** Until the tenant counts `count` open operations (a settlement reaches it with its forward, a moment later). */
async function untilOpen(tenantId: string, count: number): Promise<number> {
  let open = await env.TENANTS.getByName(tenantId).openOperationCount();
  for (let attempt = 0; attempt < 200 && open !== count; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    open = await env.TENANTS.getByName(tenantId).openOperationCount();
  }
  return open;
}

/**
 * A new key of the tenant, verified by one read: this isolate trusts it for KEY_TRUST_MS from now,
 * so a prompt sent with it next is warm (a key trusted since the test began may expire on a loaded
 * machine, and a cold prompt reserves on its own path by design).
 */
async function freshKey(setup: { tenantId: string; lanePath: string }): Promise<string> {
  const created = await call(`/v1/admin/tenants/${setup.tenantId}/keys`, { body: { name: "fresh" }, token: adminToken() });
  const { key } = await created.json<{ key: string }>();
  expect((await call(setup.lanePath, { token: key })).status).toBe(200);
  return key;
}

async function ids(key: string, query: string): Promise<string[]> {
  return (await (await call(`/v1/sessions?${query}`, { token: key })).json<{ items: { id: string }[] }>()).items.map((row) => row.id);
}

describe("the slot a session holds for a lane's next prompt", () => {
  it("a warm prompt after a settled one calls the tenant only after its answer, with the settlement forward", async () => {
    const setup = await laneSetup("held");
    const recorder = await recordCalls(setup.tenantId);
    expect((await prompt(setup)).status).toBe(200);
    // The first prompt reserves on its path; its forward brings the slot for the next one.
    expect(await pollCalls(recorder.read, (calls) => settledForwards(calls) >= 1)).toEqual(["authorizeAndReserve", "operationsSettled"]);
    await recorder.stop();
    const calls = await warmCalls(
      setup.tenantId,
      async () => {
        expect((await prompt(setup)).status).toBe(200);
        await untilHeld(setup);
      },
      async () => {
        const response = await prompt(setup, { prompt: "second" });
        expect(response.status).toBe(200);
        expect(await response.json()).toMatchObject({ status: "completed" });
      },
      (seen) => settledForwards(seen) >= 1,
    );
    expect(calls).toEqual(["operationsSettled"]);
    // Holding it is not an open operation: the tenant counts none, the session is idle in search.
    expect(await env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(0);
    expect(await ids(setup.key, "status=active")).toEqual([]);
  });

  it("a prompt refused by a busy lane keeps the slot; a run still going after a second is bound to it (counted, active) until it settles", async () => {
    const setup = await laneSetup("heldbind");
    expect((await prompt(setup)).status).toBe(200);
    await untilHeld(setup);
    await useScript(setup, [slowStep(40), slowStep(80)]);
    // A run started with POST …/operations reserves on its own path: the lane's slot stays held.
    const running = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "first" }, token: setup.key });
    expect(running.status).toBe(202);
    const recorder = await recordCalls(setup.tenantId);
    // Refused by the busy lane after it took the slot: the slot is held again, nothing is reserved.
    expect(await errorCode(await prompt({ ...setup, key: await freshKey(setup) }, { prompt: "busy" }))).toBe("LaneBusy");
    const { operationId: first } = await running.json<{ operationId: string }>();
    expect((await call(`${setup.lanePath}/operations/${first}?wait=30`, { token: setup.key })).status).toBe(200);
    expect(await untilOpen(setup.tenantId, 0)).toBe(0);
    // Answered before it settles (wait 0): bound to the held slot at once.
    const started = await prompt({ ...setup, key: await freshKey(setup) }, { prompt: "long", wait: 0 });
    expect(started.status).toBe(202);
    const { operationId } = await started.json<{ operationId: string }>();
    expect(await pollCalls(recorder.read, (calls) => calls.includes("bindOperation"))).toContain("bindOperation");
    expect(await env.TENANTS.getByName(setup.tenantId).openOperationCount()).toBe(1);
    expect(await ids(setup.key, "status=active")).toEqual([setup.sid]);
    expect((await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key })).status).toBe(200);
    const seen = await pollCalls(recorder.read, (calls) => settledForwards(calls) >= 2);
    await recorder.stop();
    expect(seen.filter((name) => name === "reserveOperation" || name === "authorizeAndReserve")).toEqual([]);
    expect(await untilOpen(setup.tenantId, 0)).toBe(0);
    expect(await ids(setup.key, "status=active")).toEqual([]);
  });

  it("a tenant at its quota takes the slots sessions hold ahead; a quota too small to spare holds none", async () => {
    const setup = await laneSetup("heldquota");
    const quotas = await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 2 }, token: adminToken() });
    expect(quotas.status).toBe(200);
    const recorder = await recordCalls(setup.tenantId);
    expect((await prompt(setup)).status).toBe(200);
    await pollCalls(recorder.read, (calls) => settledForwards(calls) >= 1);
    await recorder.stop();
    const tenant = env.TENANTS.getByName(setup.tenantId);
    // The session holds a slot now (half the quota was free), yet two operations of other sessions
    // get the quota's two slots; a third is refused.
    const reserved = [];
    for (const sid of ["other-a", "other-b", "other-c"]) reserved.push((await tenant.reserveOperation(sid, "main")).ok);
    expect(reserved).toEqual([true, true, false]);
    expect(await tenant.openOperationCount()).toBe(2);

    // Quota 1: half of it is no slot, so every prompt reserves on its own path.
    const small = await laneSetup("heldsmall");
    expect((await call(`/v1/admin/tenants/${small.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() })).status).toBe(200);
    const smallRecorder = await recordCalls(small.tenantId);
    for (const text of ["one", "two"]) expect((await prompt(small, { prompt: text })).status).toBe(200);
    const seen = await pollCalls(smallRecorder.read, (calls) => settledForwards(calls) >= 2);
    await smallRecorder.stop();
    expect(seen.filter((name) => name === "authorizeAndReserve")).toHaveLength(2);
  });
});
