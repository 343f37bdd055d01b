import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, inject } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { FORWARD_RETRY_MS } from "../../durable-objects/session/due-work/settlement-outbox.ts";
import { idText } from "../../durable-objects/session/storage/stored-ids.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import type { CreatedWebhook, WebhookDelivery, WebhookEndpoint } from "../../schema/webhooks.ts";
import type { ReceivedDelivery } from "../node/webhook-receiver-setup.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

export type { ReceivedDelivery };

let scopes = 0;

/**
 * A scope of the local webhook receiver (test/node/webhook-receiver-setup.ts): `url(behaviour)`
 * is an endpoint URL answering as the behaviour says, `received()` lists the calls it got.
 */
export function receiver(prefix: string) {
  const base = inject("webhookReceiverUrl");
  const scope = `${prefix}-${Date.now().toString(36)}-${(scopes++).toString(36)}`;
  return {
    url: (behaviour: string) => `${base}/receive/${scope}/${behaviour}`,
    async received(): Promise<ReceivedDelivery[]> {
      return (await fetch(`${base}/requests/${scope}`)).json<ReceivedDelivery[]>();
    },
  };
}

export async function register(key: string, url: string, events: string[] = ["operation.settled"]): Promise<CreatedWebhook> {
  const response = await call("/v1/webhooks", { body: { url, events }, token: key });
  expect(response.status).toBe(201);
  return response.json<CreatedWebhook>();
}

export async function deliveries(key: string, endpointId: string): Promise<WebhookDelivery[]> {
  const response = await call(`/v1/webhooks/${endpointId}/deliveries`, { token: key });
  expect(response.status).toBe(200);
  return (await response.json<{ items: WebhookDelivery[] }>()).items;
}

/** Waits (bounded, polling) until `check` answers something other than undefined. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The receiver's calls once there are at least `count`. */
export function receivedAtLeast(scope: ReturnType<typeof receiver>, count: number, timeoutMs?: number): Promise<ReceivedDelivery[]> {
  return eventually(async () => {
    const calls = await scope.received();
    return calls.length >= count ? calls : undefined;
  }, `${count} deliveries`, timeoutMs);
}

/** Whether a delivery carries the documented signature: `sha256=` + hex HMAC-SHA256 of `timestamp.body`. */
export async function signatureValid(secret: string, delivery: ReceivedDelivery): Promise<boolean> {
  if (delivery.timestamp === null || delivery.signature === null) return false;
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(`${delivery.timestamp}.${delivery.rawBody}`)));
  const expected = `sha256=${[...mac].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
  return expected === delivery.signature;
}

/** Makes every pending delivery of the tenant due now (instead of waiting for its backoff) and runs the alarm. */
export async function retryNow(tenantId: string): Promise<void> {
  const tenant = env.TENANTS.getByName(tenantId);
  await runInDurableObject(tenant, async (_instance: TenantObject, state) => {
    state.storage.sql.exec("UPDATE webhook_deliveries SET next_attempt_at = created_at WHERE status = 'pending'");
    await state.storage.setAlarm(Date.now());
  });
}

/** A prompt on the lane, waited for until it settled; answers the operation id. */
export async function settledPrompt(key: string, lanePath: string, prompt: string): Promise<string> {
  const response = await call(`${lanePath}/prompt`, { body: { prompt, wait: 30 }, token: key });
  expect(response.status).toBe(200);
  const body = await response.json<{ operationId: string; status: string }>();
  expect(body.status).toBe("completed");
  return body.operationId;
}

/**
 * Runs the tenant's webhook clock forward to its next pending attempt and makes that attempt: the
 * wait that is skipped is taken off every stored time the schedule measures from (each pending
 * delivery's due, first and last attempt, and every endpoint's start of failing), exactly as if it
 * had passed, and the alarm then runs. False when nothing was pending.
 */
export async function skipToNextAttempt(tenantId: string): Promise<boolean> {
  const tenant = env.TENANTS.getByName(tenantId);
  const pending = await runInDurableObject(tenant, async (_instance: TenantObject, state) => {
    const { due } = state.storage.sql.exec<{ due: number | null }>("SELECT MIN(next_attempt_at) AS due FROM webhook_deliveries WHERE status = 'pending'").one();
    if (due === null) return false;
    passStoredTime(state.storage.sql, Math.max(0, due - Date.now()));
    // Scheduled, so that runDurableObjectAlarm runs it, but not due: an alarm due now could also
    // fire on its own while the test runs it, and two alarm runs at once (which the platform never
    // makes) would both send the same due delivery.
    await state.storage.setAlarm(Date.now() + 3_600_000);
    return true;
  });
  if (pending) await runDurableObjectAlarm(tenant);
  return pending;
}

/** As if `ms` had passed since every time the tenant's webhook schedule has stored. */
export async function passWebhookTime(tenantId: string, ms: number): Promise<void> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => passStoredTime(state.storage.sql, ms));
}

function passStoredTime(sql: SqlStorage, ms: number): void {
  sql.exec(
    "UPDATE webhook_deliveries SET next_attempt_at = next_attempt_at - ?, first_attempt_at = first_attempt_at - ?, last_attempt_at = last_attempt_at - ? WHERE status = 'pending'",
    ms,
    ms,
    ms,
  );
  sql.exec("UPDATE webhook_endpoints SET failing_since = failing_since - ?", ms);
}

export async function endpointOf(key: string, endpointId: string): Promise<WebhookEndpoint> {
  const response = await call("/v1/webhooks", { token: key });
  expect(response.status).toBe(200);
  const found = (await response.json<{ items: WebhookEndpoint[] }>()).items.find((item) => item.id === endpointId);
  if (!found) throw new Error(`no endpoint ${endpointId}`);
  return found;
}

/** Settles `count` made-up operations of a session through the tenant's settlement RPC (what sessions forward): one event each. */
export async function settleMany(tenantId: string, sid: string, count: number, prefix = "op"): Promise<void> {
  const now = Date.now();
  const operations = Array.from({ length: count }, (_, i) => ({
    operationId: `${prefix}-${now.toString(36)}-${i}`,
    lane: "main",
    settledAt: now,
    result: { kind: "run", status: "completed", endedAt: now },
  }));
  await env.TENANTS.getByName(tenantId).operationsSettled(sid, operations);
}

/**
 * The settlement forward a session makes (and repeats after a crash) for a settled run of the
 * lane: its record as stored, so that a repeat tells the tenant exactly what the first did.
 */
export async function repeatedForward(lanePath: string, key: string, operationId: string) {
  const view = await (await call(`${lanePath}/operations/${operationId}`, { token: key })).json<{ result: { endedAt: number } }>();
  return { operationId, lane: "main", settledAt: Date.now(), result: { kind: "run", status: "completed", endedAt: view.result.endedAt } };
}

/** A lane, a webhook endpoint for `operation.settled` on it, and one prompt settled there whose delivery was logged delivered. */
export async function deliveredPrompt(prefix: string) {
  const setup = await laneSetup(prefix);
  const hook = receiver(prefix);
  const endpoint = await register(setup.key, hook.url("ok"));
  const operationId = await settledPrompt(setup.key, setup.lanePath, "delivered once");
  const [delivery] = await receivedAtLeast(hook, 1);
  await eventually(async () => ((await deliveries(setup.key, endpoint.id))[0]?.status === "delivered" ? true : undefined), "the delivery");
  return { setup, hook, endpoint, operationId, delivery };
}

export type OutboxRow = { operation_id: string; settled_at: number; forward_at: number };

/** The session's settlement outbox, read in its object. */
export function outboxRows(tenantId: string, sid: string): Promise<OutboxRow[]> {
  return runInDurableObject(env.SESSIONS.getByName(`${tenantId}:${sid}`), (_instance: SessionObject, state) =>
    state.storage.sql.exec<OutboxRow>(`SELECT ${idText("operation_id")} AS operation_id, settled_at, forward_at FROM settlement_outbox`).toArray(),
  );
}

/** Makes every usage forward to the tenant object fail (its usage marks table is away), or heals it. */
export function breakUsageMarks(tenantId: string, broken: boolean): Promise<void> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    state.storage.sql.exec(broken ? "ALTER TABLE session_usage_marks RENAME TO session_usage_marks_away" : "ALTER TABLE session_usage_marks_away RENAME TO session_usage_marks");
  });
}

/** Makes the tenant object fail every forward that enqueues a webhook (its delivery table out of reach), or heals it. */
export function breakTenant(tenantId: string, broken: boolean): Promise<void> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    state.storage.sql.exec(broken ? "ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_away" : "ALTER TABLE webhook_deliveries_away RENAME TO webhook_deliveries");
  });
}

/**
 * A lane with a webhook endpoint whose prompt settled while the tenant object failed every
 * forward: answers once the live forward failed and postponed the settlement's outbox row (the
 * tenant is healed by then, its slot still held and nothing enqueued).
 */
export async function failedForward(prefix: string) {
  const setup = await laneSetup(prefix);
  const hook = receiver(prefix);
  const endpoint = await register(setup.key, hook.url("ok"));
  await breakTenant(setup.tenantId, true);
  const operationId = await settledPrompt(setup.key, setup.lanePath, "settled while the tenant fails");
  const [row] = await eventually(async () => {
    const rows = await outboxRows(setup.tenantId, setup.sid);
    return rows[0] && rows[0].forward_at >= rows[0].settled_at + FORWARD_RETRY_MS ? rows : undefined;
  }, "the failed forward to postpone its row");
  await breakTenant(setup.tenantId, false);
  return { setup, hook, endpoint, operationId, row };
}
