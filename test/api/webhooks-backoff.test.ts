import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { WebhookDelivery } from "../../schema/webhooks.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { expectError } from "./session-helpers.ts";
import {
  deliveries,
  endpointOf,
  eventually,
  receivedAtLeast,
  receiver,
  register,
  settledPrompt,
  settleMany,
  skipToNextAttempt,
} from "./webhooks-helpers.ts";

// The retry schedule and the disabling of endpoints that keep failing, through the real app, the
// TenantObject's alarm and a real local receiver. Hours are not waited for: the test runs the
// schedule's clock forward (skipToNextAttempt takes the skipped wait off every stored time) and
// runs the alarm, then reads what the API shows.

const HOUR = 3_600_000;

/** Waits until the endpoint's delivery of its only event has made its first attempt. */
async function firstAttempt(key: string, endpointId: string, count = 1): Promise<void> {
  await eventually(async () => ((await deliveries(key, endpointId)).filter((item) => item.attempts >= 1).length >= count ? true : undefined), "the first attempt");
}

/** Steps the clock attempt by attempt until no delivery is pending; answers the waits scheduled after each attempt (ms). */
async function runOutRetries(setup: { tenantId: string; key: string }, endpointId: string, bound = 100): Promise<number[]> {
  const waits: number[] = [];
  for (let step = 0; step < bound; step++) {
    const [item] = (await deliveries(setup.key, endpointId)).filter((delivery) => delivery.status === "pending");
    if (!item) return waits;
    waits.push((item.nextAttemptAt ?? 0) - (item.lastAttemptAt ?? 0));
    expect(await skipToNextAttempt(setup.tenantId)).toBe(true);
  }
  throw new Error(`still pending after ${bound} attempts`);
}

/** A lane whose tenant has an endpoint that always answers 500, after one settled prompt's first failed attempt. */
async function oneFailedAttempt(prefix: string) {
  const setup = await laneSetup(prefix);
  const hook = receiver(prefix);
  const endpoint = await register(setup.key, hook.url("fail"));
  await settledPrompt(setup.key, setup.lanePath, "never answered well");
  await firstAttempt(setup.key, endpoint.id);
  return { setup, hook, endpoint };
}

describe("webhook retries and disabled endpoints", () => {
  it("retries a failing delivery after 30 s, doubling up to 1 h, and gives it up after 24 h (30 attempts)", async () => {
    const { setup, hook, endpoint } = await oneFailedAttempt("whbackoff");

    const waits = await runOutRetries(setup, endpoint.id);
    const seconds = waits.map((ms) => ms / 1000);
    expect(seconds).toEqual([30, 60, 120, 240, 480, 960, 1920, ...Array.from({ length: 22 }, () => 3600)]);
    // Every attempt but the first came after a wait; the last one was made within 24 h of the first.
    expect(waits.reduce((sum, ms) => sum + ms, 0)).toBeLessThanOrEqual(24 * HOUR);

    const [failed] = await deliveries(setup.key, endpoint.id);
    expect(failed).toMatchObject({ status: "failed", attempts: 30, lastStatusCode: 500, nextAttemptAt: null });
    expect(await hook.received()).toHaveLength(30);
    // Nothing is scheduled any more; 30 failed attempts do not disable the endpoint.
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    expect(await hook.received()).toHaveLength(30);
    expect(await endpointOf(setup.key, endpoint.id)).toMatchObject({ status: "enabled" });
  });

  it("disables an endpoint whose every attempt failed for 72 h; it is sent nothing until the tenant re-enables it", async () => {
    const setup = await laneSetup("wh72h");
    const hook = receiver("72h");
    const endpoint = await register(setup.key, hook.url("fail"));

    // An event a day, each retried until it is given up: three days of nothing but failures.
    let events = 0;
    for (; events < 5; events++) {
      await settledPrompt(setup.key, setup.lanePath, `day ${events}`);
      await firstAttempt(setup.key, endpoint.id, events + 1);
      await runOutRetries(setup, endpoint.id);
      if ((await endpointOf(setup.key, endpoint.id)).status === "disabled") break;
    }
    expect(events).toBe(3);
    const disabled = await endpointOf(setup.key, endpoint.id);
    expect(disabled).toEqual({
      id: endpoint.id,
      url: endpoint.url,
      events: ["operation.settled"],
      createdAt: endpoint.createdAt,
      status: "disabled",
      disabledReason: expect.stringMatching(/^every attempt failed for 72 h, since .* \(the last: HTTP 500\)/),
      disabledAt: expect.any(Number),
    });
    // Three days of attempts, far fewer than the 200 in a row that would also disable it.
    const sent = (await hook.received()).length;
    expect(sent).toBeGreaterThan(90);
    expect(sent).toBeLessThan(200);

    // Disabled: a new settlement is not delivered, and nothing is scheduled for it.
    await settledPrompt(setup.key, setup.lanePath, "while disabled");
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    expect(await skipToNextAttempt(setup.tenantId)).toBe(false);
    expect(await hook.received()).toHaveLength(sent);

    // Re-enabled: the next settlement is sent again, and one failure does not disable it at once.
    const patched = await call(`/v1/webhooks/${endpoint.id}`, { method: "PATCH", body: { enabled: true }, token: setup.key });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toEqual({ id: endpoint.id, url: endpoint.url, events: ["operation.settled"], createdAt: endpoint.createdAt, status: "enabled" });
    await settledPrompt(setup.key, setup.lanePath, "after re-enabling");
    await receivedAtLeast(hook, sent + 1);
    await firstAttempt(setup.key, endpoint.id, 5);
    expect(await endpointOf(setup.key, endpoint.id)).toMatchObject({ status: "enabled" });
  });

  it("disables an endpoint after 200 failed attempts in a row: exactly 200 POSTs, the rest given up", async () => {
    const setup = await laneSetup("wh200");
    const hook = receiver("200");
    const endpoint = await register(setup.key, hook.url("fail"));
    await settleMany(setup.tenantId, setup.sid, 250);

    const disabled = await eventually(async () => {
      const current = await endpointOf(setup.key, endpoint.id);
      return current.status === "disabled" ? current : undefined;
    }, "the endpoint to be disabled");
    expect(disabled.disabledReason).toMatch(/^200 attempts in a row failed \(the last: HTTP 500\)/);
    expect(await hook.received()).toHaveLength(200);
    // The log keeps the latest 100: attempted ones that failed, then the 50 never sent.
    const page = await call(`/v1/webhooks/${endpoint.id}/deliveries?limit=100`, { token: setup.key });
    const log = (await page.json<{ items: WebhookDelivery[] }>()).items;
    expect(log).toHaveLength(100);
    expect(log.every((item) => item.status === "failed")).toBe(true);
    expect(log.filter((item) => item.attempts === 0).map((item) => item.lastError)).toEqual(Array.from({ length: 50 }, () => "given up: the endpoint was disabled"));

    // Nothing more, whatever happens: no retry, no new event.
    await settleMany(setup.tenantId, setup.sid, 3, "later");
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    expect(await skipToNextAttempt(setup.tenantId)).toBe(false);
    expect(await hook.received()).toHaveLength(200);

    // The tenant may disable and re-enable by itself too; re-enabling makes it receive again.
    const off = await call(`/v1/webhooks/${endpoint.id}`, { method: "PATCH", body: { enabled: false }, token: setup.key });
    expect(await off.json()).toMatchObject({ status: "disabled", disabledReason: disabled.disabledReason });
    const on = await call(`/v1/webhooks/${endpoint.id}`, { method: "PATCH", body: { enabled: true }, token: setup.key });
    expect(await on.json()).toMatchObject({ status: "enabled" });
    await settleMany(setup.tenantId, setup.sid, 1, "again");
    await receivedAtLeast(hook, 201);
  });

  it("lets the tenant disable an endpoint itself: its pending deliveries are given up and nothing is sent", async () => {
    const { setup, hook, endpoint } = await oneFailedAttempt("whoff");

    const off = await call(`/v1/webhooks/${endpoint.id}`, { method: "PATCH", body: { enabled: false }, token: setup.key });
    expect(off.status).toBe(200);
    expect(await off.json()).toMatchObject({ status: "disabled", disabledReason: "disabled by the tenant (PATCH /v1/webhooks/{id})", disabledAt: expect.any(Number) });
    const [given] = await deliveries(setup.key, endpoint.id);
    expect(given).toMatchObject({ status: "failed", attempts: 1, nextAttemptAt: null, lastError: "given up: the endpoint was disabled (the last attempt: HTTP 500)" });
    expect(await skipToNextAttempt(setup.tenantId)).toBe(false);
    expect(await hook.received()).toHaveLength(1);
  });

  it("PATCH changes the subscriptions, validates its body and keeps tenants apart", async () => {
    const setup = await laneSetup("whpatch");
    const other = await laneSetup("whpatchother");
    const hook = receiver("patch");
    const endpoint = await register(setup.key, hook.url("ok"));
    const path = `/v1/webhooks/${endpoint.id}`;

    const resubscribed = await call(path, { method: "PATCH", body: { events: ["operation.suspended", "operation.suspended"] }, token: setup.key });
    expect(await resubscribed.json()).toMatchObject({ events: ["operation.suspended"], status: "enabled" });
    await settledPrompt(setup.key, setup.lanePath, "not subscribed any more");
    await runDurableObjectAlarm(env.TENANTS.getByName(setup.tenantId));
    expect(await hook.received()).toEqual([]);
    expect((await call(path, { method: "PATCH", body: {}, token: setup.key })).status).toBe(200);

    for (const body of [{ events: [] }, { events: ["operation.exploded"] }, { enabled: "yes" }, { enabled: true, url: "https://example.com/other" }, []]) {
      await expectError(await call(path, { method: "PATCH", body, token: setup.key }), 400, "ValidationFailed");
    }
    await expectError(await call(path, { method: "PATCH", body: { enabled: false }, token: other.key }), 404, "NotFound");
    await expectError(await call("/v1/webhooks/wh_nobody", { method: "PATCH", body: { enabled: true }, token: setup.key }), 404, "NotFound");
    await expectError(await call("/v1/webhooks/bad%20id", { method: "PATCH", body: { enabled: true }, token: setup.key }), 400, "ValidationFailed");
    expect((await call(path, { method: "PATCH", body: { enabled: false } })).status).toBe(401);
    // Nothing the refusals asked for was applied.
    expect(await endpointOf(setup.key, endpoint.id)).toMatchObject({ events: ["operation.suspended"], status: "enabled" });
  });
});
