import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { adminToken, call } from "./helpers.ts";
import { laneSetup, slowStep, untilHeld, useScript } from "./lane-helpers.ts";
import { pollCalls, recordCalls } from "./tenant-calls.ts";

// "An operation that outlived its request keeps its slot" (docs/api-tenants.md), also one started
// on a slot held ahead that a restart of the tenant object forgot: the session names its session
// and lane with the bind, and the tenant counts the operation by them.

describe("maxOpenOperations across a restart of the tenant object", () => {
  it("an operation started on a held slot after the tenant object restarted still holds a slot of the quota", async () => {
    const setup = await laneSetup("hs_restart");
    expect((await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 2 }, token: adminToken() })).status).toBe(200);
    await useScript(setup, [{ text: "quick" }, slowStep(300)]);
    expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "first" }, token: setup.key })).status).toBe(200);
    await untilHeld(setup);

    const tenant = env.TENANTS.getByName(setup.tenantId);
    await evictDurableObject(tenant);
    // A fresh key, verified now: the next prompt is warm and goes to the session's held slot.
    const created = await call(`/v1/admin/tenants/${setup.tenantId}/keys`, { body: { name: "fresh" }, token: adminToken() });
    const { key } = await created.json<{ key: string }>();
    expect((await call(setup.lanePath, { token: key })).status).toBe(200);
    const recorder = await recordCalls(setup.tenantId);
    const started = await call(`${setup.lanePath}/prompt`, { body: { prompt: "long", wait: 0 }, token: key });
    expect(started.status).toBe(202);
    const { operationId } = await started.json<{ operationId: string }>();
    const seen = await pollCalls(recorder.read, (calls) => calls.includes("bindOperation"));
    await recorder.stop();
    // The long run went through the held slot (no reservation on its path) and was bound.
    expect(seen.filter((name) => name === "authorizeAndReserve" || name === "reserveOperation")).toEqual([]);
    expect(seen).toContain("bindOperation");

    // The run is open and outlived its request: it is counted, so one more slot of two is left.
    const counted = await tenant.openOperationCount();
    const reserved = [];
    for (const sid of ["other-a", "other-b"]) reserved.push((await tenant.reserveOperation(sid, "main")).ok);
    expect({ counted, reserved }).toEqual({ counted: 1, reserved: [true, false] });

    await call(`${setup.lanePath}/operations/${operationId}/abort`, { method: "POST", body: {}, token: setup.key });
  });
});
