import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { laneSetup } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { deliveredPrompt, failedForward, deliveries, eventually, outboxRows, receivedAtLeast, repeatedForward, settledPrompt } from "./webhooks-helpers.ts";

// The session's settlement outbox: a settled operation's row is written in the settling commit and
// forwarded after it to the TenantObject, which frees the open-operation slot and enqueues the
// webhook, idempotently. Nothing is lost when the forward fails and the object is evicted before
// it is repeated, and nothing is delivered twice when a forward is repeated.

async function tenantCounts(tenantId: string): Promise<{ open: number; deliveries: number }> {
  const tenant = env.TENANTS.getByName(tenantId);
  return {
    open: await tenant.openOperationCount(),
    deliveries: await runInDurableObject(tenant, (_instance: TenantObject, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries").one().n),
  };
}

describe("settlement outbox", () => {
  it("a settlement whose forward failed survives an eviction and is delivered exactly once by the session's alarm", async () => {
    // The live forward failed: the row stays, postponed, and the tenant still holds the slot.
    const { setup, hook, endpoint, operationId, row } = await failedForward("obevict");
    expect(row?.operation_id).toBe(operationId);
    expect(await tenantCounts(setup.tenantId)).toEqual({ open: 1, deliveries: 0 });

    // Memory is dropped; the row and the alarm armed for it are not.
    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    const alarm = await runInDurableObject(objectOf(setup.tenantId, setup.sid), async (_instance: SessionObject, state) => {
      state.storage.sql.exec("UPDATE settlement_outbox SET forward_at = settled_at");
      return state.storage.getAlarm();
    });
    expect(alarm).not.toBeNull();
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);

    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    const [delivery] = await receivedAtLeast(hook, 1);
    expect(JSON.parse(delivery?.rawBody ?? "{}")).toMatchObject({ type: "operation.settled", data: { operationId } });
    expect(await tenantCounts(setup.tenantId)).toEqual({ open: 0, deliveries: 1 });
    // Nothing left to do on either side: no second delivery.
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(false);
    await eventually(async () => ((await deliveries(setup.key, endpoint.id))[0]?.status === "delivered" ? true : undefined), "the delivery to be logged");
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    expect(await hook.received()).toHaveLength(1);
  });

  it("a repeated forward of the same settlement enqueues nothing twice", async () => {
    const { setup, hook, endpoint, operationId, delivery: first } = await deliveredPrompt("obrepeat");

    // The forward a crash would repeat: the same operation and record, told again.
    const tenant = env.TENANTS.getByName(setup.tenantId);
    const forwarded = await repeatedForward(setup.lanePath, setup.key, operationId);
    await tenant.operationsSettled(setup.sid, [forwarded]);
    await tenant.operationsSettled(setup.sid, [forwarded]);
    await runDurableObjectAlarm(tenant);

    const log = await deliveries(setup.key, endpoint.id);
    expect(log.map((item) => item.eventId)).toEqual([first?.webhookId]);
    expect(await hook.received()).toHaveLength(1);
    expect(await tenantCounts(setup.tenantId)).toEqual({ open: 0, deliveries: 1 });
  });

  it("frees the open-operation slot through the forward: with a quota of one, prompts follow each other", async () => {
    const setup = await laneSetup("obslot");
    const quota = await fetchQuota(setup.tenantId, 1);
    expect(quota).toBe(200);
    for (const prompt of ["one", "two", "three"]) {
      await settledPrompt(setup.key, setup.lanePath, prompt);
      await eventually(async () => ((await tenantCounts(setup.tenantId)).open === 0 ? true : undefined), "the slot to be freed");
      // A tenant without webhook endpoints: a turn settled within its request keeps no row.
      expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    }
    expect(await tenantCounts(setup.tenantId)).toEqual({ open: 0, deliveries: 0 });
  });

  it("with a webhook endpoint, an acknowledged row is deleted by the next turn's commit or by the alarm", async () => {
    const { setup, operationId } = await deliveredPrompt("obnext");
    expect((await outboxRows(setup.tenantId, setup.sid)).map((row) => row.operation_id)).toEqual([operationId]);
    const last = await settledPrompt(setup.key, setup.lanePath, "again");
    expect((await outboxRows(setup.tenantId, setup.sid)).map((row) => row.operation_id)).toEqual([last]);
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);
    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
  });

  it("an acknowledged row whose deletion died with the object is forwarded again by the alarm and delivered once", async () => {
    const { setup, hook, endpoint, operationId } = await deliveredPrompt("obacked");

    // The tenant acknowledged the row; its deletion waits for the next commit, which never comes.
    expect((await outboxRows(setup.tenantId, setup.sid)).map((row) => row.operation_id)).toEqual([operationId]);
    await evictDurableObject(objectOf(setup.tenantId, setup.sid));
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);

    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    expect((await deliveries(setup.key, endpoint.id)).map((item) => item.status)).toEqual(["delivered"]);
    expect(await hook.received()).toHaveLength(1);
    expect(await tenantCounts(setup.tenantId)).toEqual({ open: 0, deliveries: 1 });
  });
});

async function fetchQuota(tenantId: string, maxOpenOperations: number): Promise<number> {
  const { adminToken, call } = await import("./helpers.ts");
  return (await call(`/v1/admin/tenants/${tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations }, token: adminToken() })).status;
}
