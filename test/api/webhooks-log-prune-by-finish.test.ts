import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { KEPT_FINISHED_DELIVERIES, TenantWebhooks } from "../../durable-objects/tenant/webhooks/tenant-webhooks.ts";
import { deliverDue } from "../../durable-objects/tenant/webhooks/webhook-delivery.ts";
import { RETRY_WINDOW_MS } from "../../durable-objects/tenant/webhooks/webhook-schedule.ts";
import { call, newTenant } from "./helpers.ts";
import { register } from "./webhooks-helpers.ts";

// docs/webhooks.md, "The delivery log": "The log keeps the latest 100 finished (delivered or
// failed) deliveries per endpoint". Latest by when they finished: a delivery that keeps failing
// while newer ones are delivered is shown, with its `lastError`, once it has failed for good.

const eventId = (n: number) => `evt_${n.toString(16).padStart(32, "0")}`;

describe("the delivery log", () => {
  it("shows a delivery that has just failed for good, even when more than 100 newer ones were delivered meanwhile", async () => {
    const { tenantId, key } = await newTenant("whprune");
    const endpoint = await register(key, "http://127.0.0.1:9/log-prune");
    const stuck = eventId(0);
    // The receiver rejects this one event and accepts every other.
    const fetch = async (_input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
      const headers = new Headers(init?.headers);
      return new Response(null, { status: headers.get("webhook-id") === stuck ? 500 : 204 });
    };
    await runInDurableObject(env.TENANTS.getByName(tenantId), async (_instance: TenantObject, state) => {
      const webhooks = new TenantWebhooks(state.storage.sql);
      const settings = { tenantId, secretsKey: env.SECRETS_KEY, allowLoopback: true, fetch };
      const start = Date.now();
      webhooks.enqueue([{ id: stuck, type: "operation.settled", body: '{"n":0}' }], start - 1);
      await deliverDue(webhooks, settings, Date.now());
      // Newer events, all delivered while the first one waits for its retries.
      const newer = Array.from({ length: KEPT_FINISHED_DELIVERIES + 5 }, (_, i) => ({ id: eventId(i + 1), type: "operation.settled" as const, body: `{"n":${i + 1}}` }));
      webhooks.enqueue(newer, Date.now());
      for (let run = 0; run < 40; run++) await deliverDue(webhooks, settings, Date.now());
      // Its last retry: the retry window has passed since its first attempt.
      state.storage.sql.exec(
        "UPDATE webhook_deliveries SET next_attempt_at = ?, first_attempt_at = ? WHERE event_id = ?",
        Date.now(),
        Date.now() - RETRY_WINDOW_MS,
        stuck,
      );
      const before = state.storage.sql.exec<{ status: string; attempts: number }>("SELECT status, attempts FROM webhook_deliveries WHERE event_id = ?", stuck).one();
      expect(before).toEqual({ status: "pending", attempts: 1 });
      await deliverDue(webhooks, settings, Date.now());
    });

    const log: { eventId: string; status: string }[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `?limit=1000&cursor=${cursor}` : "?limit=1000";
      const page = await call(`/v1/webhooks/${endpoint.id}/deliveries${query}`, { token: key });
      const body = await page.json<{ items: { eventId: string; status: string }[]; nextCursor: string | null }>();
      log.push(...body.items);
      cursor = body.nextCursor;
    } while (cursor);
    expect(log.filter((item) => item.status === "delivered").length).toBeGreaterThan(0);
    // The delivery that finished last is among the latest finished ones, shown as failed.
    expect(log.find((item) => item.eventId === stuck)).toMatchObject({ status: "failed" });
  });
});
