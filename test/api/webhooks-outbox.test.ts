import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session-object.ts";
import { FORWARD_RETRY_MS } from "../../durable-objects/session/settlement-outbox.ts";
import type { TenantObject } from "../../durable-objects/tenant-object.ts";
import { laneSetup } from "./lane-helpers.ts";
import { objectOf } from "./session-helpers.ts";
import { deliveries, eventually, receivedAtLeast, receiver, register, settledPrompt } from "./webhooks-helpers.ts";
import { idText } from "../../durable-objects/sql/stored-ids.ts";

// The session's settlement outbox: a settled operation's row is written in the settling commit and
// forwarded after it to the TenantObject, which frees the open-operation slot and enqueues the
// webhook, idempotently. Nothing is lost when the forward fails and the object is evicted before
// it is repeated, and nothing is delivered twice when a forward is repeated.

type OutboxRow = { operation_id: string; settled_at: number; forward_at: number };

function outboxRows(tenantId: string, sid: string): Promise<OutboxRow[]> {
  return runInDurableObject(objectOf(tenantId, sid), (_instance: SessionObject, state) =>
    state.storage.sql.exec<OutboxRow>(`SELECT ${idText("operation_id")} AS operation_id, settled_at, forward_at FROM settlement_outbox`).toArray(),
  );
}

async function tenantCounts(tenantId: string): Promise<{ open: number; deliveries: number }> {
  const tenant = env.TENANTS.getByName(tenantId);
  return {
    open: await tenant.openOperationCount(),
    deliveries: await runInDurableObject(tenant, (_instance: TenantObject, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries").one().n),
  };
}

/** Makes the tenant object fail every forward (its delivery table out of reach), or heals it. */
function breakTenant(tenantId: string, broken: boolean): Promise<void> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    state.storage.sql.exec(broken ? "ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_away" : "ALTER TABLE webhook_deliveries_away RENAME TO webhook_deliveries");
  });
}

describe("settlement outbox", () => {
  it("a settlement whose forward failed survives an eviction and is delivered exactly once by the session's alarm", async () => {
    const setup = await laneSetup("obevict");
    const hook = receiver("evict");
    const endpoint = await register(setup.key, hook.url("ok"));
    await breakTenant(setup.tenantId, true);
    const operationId = await settledPrompt(setup.key, setup.lanePath, "settle while the tenant fails");

    // The live forward failed: the row stays, postponed, and the tenant still holds the slot.
    const [row] = await eventually(async () => {
      const rows = await outboxRows(setup.tenantId, setup.sid);
      return rows[0] && rows[0].forward_at >= rows[0].settled_at + FORWARD_RETRY_MS ? rows : undefined;
    }, "the failed forward to postpone its row");
    expect(row?.operation_id).toBe(operationId);
    await breakTenant(setup.tenantId, false);
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
    const setup = await laneSetup("obrepeat");
    const hook = receiver("repeat");
    const endpoint = await register(setup.key, hook.url("ok"));
    const operationId = await settledPrompt(setup.key, setup.lanePath, "once only");
    const [first] = await receivedAtLeast(hook, 1);
    await eventually(async () => ((await deliveries(setup.key, endpoint.id))[0]?.status === "delivered" ? true : undefined), "the first delivery");

    // The forward a crash would repeat: the same operation, told again.
    const tenant = env.TENANTS.getByName(setup.tenantId);
    const forwarded = { operationId, lane: "main", settledAt: Date.now(), result: { kind: "run", status: "completed", endedAt: Date.now() } };
    await tenant.operationsSettled(setup.sid, [forwarded]);
    await tenant.operationsSettled(setup.sid, [forwarded]);
    await runDurableObjectAlarm(tenant);

    const log = await deliveries(setup.key, endpoint.id);
    expect(log.map((item) => item.eventId)).toEqual([first?.webhookId]);
    expect(await hook.received()).toHaveLength(1);
    expect(await tenantCounts(setup.tenantId)).toEqual({ open: 0, deliveries: 1 });
  });

  it("frees the open-operation slot through the outbox: with a quota of one, prompts follow each other", async () => {
    const setup = await laneSetup("obslot");
    const quota = await fetchQuota(setup.tenantId, 1);
    expect(quota).toBe(200);
    let last = "";
    for (const prompt of ["one", "two", "three"]) {
      last = await settledPrompt(setup.key, setup.lanePath, prompt);
      await eventually(async () => ((await tenantCounts(setup.tenantId)).open === 0 ? true : undefined), "the slot to be freed");
    }
    // An acknowledged row is deleted by the next turn's commit, so only the last turn's is left,
    // until the alarm armed for it fires and deletes it (no commit followed).
    expect((await outboxRows(setup.tenantId, setup.sid)).map((row) => row.operation_id)).toEqual([last]);
    expect(await runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid))).toBe(true);
    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    expect(await tenantCounts(setup.tenantId)).toEqual({ open: 0, deliveries: 0 });
  });

  it("an acknowledged row whose deletion died with the object is forwarded again by the alarm and delivered once", async () => {
    const setup = await laneSetup("obacked");
    const hook = receiver("acked");
    const endpoint = await register(setup.key, hook.url("ok"));
    const operationId = await settledPrompt(setup.key, setup.lanePath, "acknowledged, then evicted");
    await receivedAtLeast(hook, 1);
    await eventually(async () => ((await deliveries(setup.key, endpoint.id))[0]?.status === "delivered" ? true : undefined), "the delivery");

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
