import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { RETRY_WINDOW_MS } from "../../durable-objects/tenant/webhooks/webhook-schedule.ts";
import type { WebhookEvent } from "../../schema/webhooks.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { deliveries, eventually, receivedAtLeast, receiver, register, retryNow, settledPrompt, signatureValid } from "./webhooks-helpers.ts";

// Deliveries from the TenantObject's outbox to a real local receiver (test/node/webhook-receiver-setup.ts):
// signed, retried after failures and timeouts with the same event id, given up after the retry
// window, stopped by deleting the endpoint. Backoff is not waited for: a test makes the stored
// next attempt due and runs the tenant's alarm.

describe("webhook deliveries", () => {
  it("a settled prompt is POSTed as operation.settled, signed, with the documented body; the log shows it delivered", async () => {
    const setup = await laneSetup("whok");
    const hook = receiver("ok");
    const endpoint = await register(setup.key, hook.url("ok"));
    const operationId = await settledPrompt(setup.key, setup.lanePath, "hello hooks");

    const [delivery] = await receivedAtLeast(hook, 1);
    if (!delivery) throw new Error("no delivery");
    expect(await signatureValid(endpoint.secret, delivery)).toBe(true);
    expect(await signatureValid("whsec_wrong", delivery)).toBe(false);
    const event = JSON.parse(delivery.rawBody) as WebhookEvent;
    expect(event).toEqual({
      id: delivery.webhookId,
      type: "operation.settled",
      createdAt: expect.any(Number),
      data: { sessionId: setup.sid, lane: "main", operationId, kind: "run", status: "completed" },
    });
    expect(event.id).toMatch(/^evt_[0-9a-f]{32}$/);
    // A summary only: no message content travels.
    expect(delivery.rawBody).not.toContain("hello hooks");

    const log = await eventually(async () => {
      const items = await deliveries(setup.key, endpoint.id);
      return items[0]?.status === "delivered" ? items : undefined;
    }, "the delivery to be logged as delivered");
    expect(log).toEqual([
      {
        eventId: event.id,
        type: "operation.settled",
        status: "delivered",
        attempts: 1,
        lastStatusCode: 204,
        nextAttemptAt: null,
        createdAt: expect.any(Number),
        lastAttemptAt: expect.any(Number),
        deliveredAt: expect.any(Number),
      },
    ]);
  });

  it("an endpoint answering 500 twice is retried with the same event id and delivered on the third attempt", async () => {
    const setup = await laneSetup("whretry");
    const hook = receiver("retry");
    const endpoint = await register(setup.key, hook.url("fail-twice"));
    await settledPrompt(setup.key, setup.lanePath, "retry me");

    await receivedAtLeast(hook, 1);
    const afterFirst = await eventually(async () => {
      const [item] = await deliveries(setup.key, endpoint.id);
      return item?.attempts === 1 ? item : undefined;
    }, "the first attempt to be recorded");
    expect(afterFirst).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 500, lastError: "HTTP 500" });
    // The first retry waits 30 s after the attempt.
    expect((afterFirst.nextAttemptAt ?? 0) - (afterFirst.lastAttemptAt ?? 0)).toBe(30_000);

    await retryNow(setup.tenantId);
    await receivedAtLeast(hook, 2);
    await eventually(async () => ((await deliveries(setup.key, endpoint.id))[0]?.attempts === 2 ? true : undefined), "the second attempt to be recorded");
    await retryNow(setup.tenantId);
    const calls = await receivedAtLeast(hook, 3);

    expect(new Set(calls.map((received) => received.webhookId)).size).toBe(1);
    for (const received of calls) expect(await signatureValid(endpoint.secret, received)).toBe(true);
    const final = await eventually(async () => {
      const [item] = await deliveries(setup.key, endpoint.id);
      return item?.status === "delivered" ? item : undefined;
    }, "the delivery to succeed");
    expect(final).toMatchObject({ attempts: 3, lastStatusCode: 200, nextAttemptAt: null });
    expect(await hook.received()).toHaveLength(3);
  });

  it("an endpoint that does not answer times out and is retried", { timeout: 60_000 }, async () => {
    const setup = await laneSetup("whhang");
    const hook = receiver("hang");
    const endpoint = await register(setup.key, hook.url("hang-first"));
    await settledPrompt(setup.key, setup.lanePath, "are you there");

    const first = await eventually(async () => {
      const [item] = await deliveries(setup.key, endpoint.id);
      return item?.attempts === 1 ? item : undefined;
    }, "the first attempt to time out", 40_000);
    expect(first).toMatchObject({ status: "pending", lastError: "timeout: the endpoint did not answer within 10000 ms" });
    expect(first.lastStatusCode).toBeUndefined();

    await retryNow(setup.tenantId);
    const calls = await receivedAtLeast(hook, 2);
    expect(calls[0]?.webhookId).toBe(calls[1]?.webhookId);
    await eventually(async () => ((await deliveries(setup.key, endpoint.id))[0]?.status === "delivered" ? true : undefined), "the retry to be delivered");
  });

  it("gives a delivery up as failed once its retry window has passed", async () => {
    const setup = await laneSetup("whgiveup");
    const hook = receiver("giveup");
    const endpoint = await register(setup.key, hook.url("fail"));
    await settledPrompt(setup.key, setup.lanePath, "never delivered");
    await eventually(async () => ((await deliveries(setup.key, endpoint.id))[0]?.attempts === 1 ? true : undefined), "the first attempt");

    // The first attempt is moved a retry window into the past: the next failure is the last.
    await runInDurableObject(env.TENANTS.getByName(setup.tenantId), (_instance: TenantObject, state) => {
      state.storage.sql.exec("UPDATE webhook_deliveries SET first_attempt_at = first_attempt_at - ?", RETRY_WINDOW_MS);
    });
    await retryNow(setup.tenantId);
    const failed = await eventually(async () => {
      const [item] = await deliveries(setup.key, endpoint.id);
      return item?.status === "failed" ? item : undefined;
    }, "the delivery to fail");
    expect(failed).toMatchObject({ attempts: 2, lastStatusCode: 500, nextAttemptAt: null });
    // Nothing is scheduled any more.
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    expect(await hook.received()).toHaveLength(2);
  });

  it("deleting an endpoint stops its pending deliveries; an endpoint subscribed to other events gets none", async () => {
    const setup = await laneSetup("whdel");
    const hook = receiver("del");
    const failing = await register(setup.key, hook.url("fail"));
    await register(setup.key, hook.url("ok"), ["operation.suspended"]);
    await settledPrompt(setup.key, setup.lanePath, "stop after one");
    await eventually(async () => ((await deliveries(setup.key, failing.id))[0]?.attempts === 1 ? true : undefined), "the first attempt");

    expect((await call(`/v1/webhooks/${failing.id}`, { method: "DELETE", token: setup.key })).status).toBe(204);
    const rows = await runInDurableObject(env.TENANTS.getByName(setup.tenantId), (_instance: TenantObject, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries").one().n,
    );
    expect(rows).toBe(0);
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    const calls = await hook.received();
    expect(calls.map((received) => received.behaviour)).toEqual(["fail"]);
  });
});
