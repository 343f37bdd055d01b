import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { OUTBOX_MAX_AGE_MS } from "../../durable-objects/session/due-work/settlement-outbox.ts";
import { EVENT_ID_RETENTION_MS } from "../../durable-objects/tenant/webhooks/webhook-event-ids.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { objectOf } from "./session-helpers.ts";
import { call } from "./helpers.ts";
import { deliveredPrompt, deliveries, failedForward, outboxRows, repeatedForward, settleMany } from "./webhooks-helpers.ts";

// Issue 30 item 6b: a settlement is forwarded to the tenant at least once, and a forward repeated
// after the tenant pruned its delivery log must not enqueue the webhook again. The session gives
// up a settlement's forward past OUTBOX_MAX_AGE_MS (dropped and logged), and the tenant remembers
// every event id it enqueued for longer than that (EVENT_ID_RETENTION_MS), so no repeat can come
// after the tenant forgot the id.

/** The event ids the tenant remembers, oldest first. */
function eventIds(tenantId: string): Promise<{ event_id: string; enqueued_at: number }[]> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) =>
    state.storage.sql.exec<{ event_id: string; enqueued_at: number }>("SELECT event_id, enqueued_at FROM webhook_event_ids ORDER BY enqueued_at, event_id").toArray(),
  );
}

/** Moves every remembered event id past the retention. */
function ageEventIds(tenantId: string): Promise<void> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    state.storage.sql.exec("UPDATE webhook_event_ids SET enqueued_at = ?", Date.now() - EVENT_ID_RETENTION_MS - 1);
  });
}

/** The lines `console.warn` printed while `run` ran (the objects share the test's isolate). */
async function warnings(run: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const warn = console.warn;
  console.warn = (line: unknown) => lines.push(String(line));
  try {
    await run();
  } finally {
    console.warn = warn;
  }
  return lines;
}

describe("issue 30 item 6b: repeated settlement forwards and the tenant's event ids", () => {
  it("keeps event ids longer than a session may repeat a forward", () => {
    expect(EVENT_ID_RETENTION_MS).toBeGreaterThan(OUTBOX_MAX_AGE_MS);
    expect(OUTBOX_MAX_AGE_MS).toBe(7 * 24 * 3_600_000);
  });

  it("a forward repeated after the tenant pruned its delivery log enqueues the webhook nothing twice", async () => {
    const { setup, hook, endpoint, operationId } = await deliveredPrompt("fwdpruned");

    // The log keeps the latest finished deliveries only (KEPT_FINISHED_DELIVERIES per endpoint):
    // this one has been pruned, as a hundred later ones would have done.
    const tenant = env.TENANTS.getByName(setup.tenantId);
    await runInDurableObject(tenant, (_instance: TenantObject, state) => {
      state.storage.sql.exec("DELETE FROM webhook_deliveries");
    });
    const forwarded = await repeatedForward(setup.lanePath, setup.key, operationId);
    await tenant.operationsSettled(setup.sid, [forwarded]);
    await runDurableObjectAlarm(tenant);

    expect(await deliveries(setup.key, endpoint.id)).toEqual([]);
    expect(await hook.received()).toHaveLength(1);
  });

  it("a settlement whose forward kept failing past the maximum retry age is dropped and logged, never delivered", async () => {
    const { setup, hook, endpoint, operationId } = await failedForward("fwdexpired");

    // A week and a day later (the row's age is what counts), the alarm retries it.
    const now = Date.now();
    await runInDurableObject(objectOf(setup.tenantId, setup.sid), (_instance: SessionObject, state) => {
      state.storage.sql.exec("UPDATE settlement_outbox SET settled_at = ?, forward_at = ?", now - OUTBOX_MAX_AGE_MS - 24 * 3_600_000, now);
    });
    const logged = await warnings(() => runDurableObjectAlarm(objectOf(setup.tenantId, setup.sid)));

    expect(logged.map((line) => JSON.parse(line))).toContainEqual(expect.objectContaining({ event: "settlement_forward_expired", operationId, lane: "main" }));
    expect(await outboxRows(setup.tenantId, setup.sid)).toEqual([]);
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    expect(await deliveries(setup.key, endpoint.id)).toEqual([]);
    expect(await hook.received()).toEqual([]);
  });

  it("forgets event ids past the retention, also once the tenant has no endpoint left", async () => {
    const { setup, endpoint, delivery } = await deliveredPrompt("idsprune");
    expect((await eventIds(setup.tenantId)).map((row) => row.event_id)).toEqual([delivery?.webhookId]);

    // With an endpoint: the next forward drops the ids past the retention and remembers its own.
    await ageEventIds(setup.tenantId);
    await settleMany(setup.tenantId, setup.sid, 1, "kept");
    const kept = await eventIds(setup.tenantId);
    expect(kept).toHaveLength(1);
    expect(kept[0]?.event_id).not.toBe(delivery?.webhookId);

    // Without one: nothing is remembered any more, and what was is still dropped once it is old.
    expect((await call(`/v1/webhooks/${endpoint.id}`, { method: "DELETE", token: setup.key })).status).toBe(204);
    await ageEventIds(setup.tenantId);
    await settleMany(setup.tenantId, setup.sid, 1, "unsubscribed");
    expect(await eventIds(setup.tenantId)).toEqual([]);
  });
});
