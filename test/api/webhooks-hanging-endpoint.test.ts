import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { TenantWebhooks } from "../../durable-objects/tenant/webhooks/tenant-webhooks.ts";
import { DELIVERY_RUN_BUDGET_MS, deliverDue } from "../../durable-objects/tenant/webhooks/webhook-delivery.ts";
import { newTenant } from "./helpers.ts";
import { deliveries, register } from "./webhooks-helpers.ts";

// The tenant's one alarm sends webhook deliveries, and its other parts (closing revoked keys'
// watch sockets, deleting sessions) wait for the run. An endpoint that never answers held a run
// one 10 s timeout per delivery it had due (up to 5), and a run took every queue it was given. Now
// an endpoint's first timeout ends its turn in the run, and no attempt starts once the run has
// spent its budget: what is left stays due, and the alarm comes back for it at once. The endpoints
// here are answered by a fake fetch (a timeout is reported at once), and the run's clock is the
// test's, so nothing waits.

/** A timeout as `AbortSignal.timeout` reports it. */
const timeout = () => Promise.reject(new DOMException("The operation timed out", "TimeoutError"));

async function tenantWithEndpoints(prefix: string, urls: string[]) {
  const { tenantId, key } = await newTenant(prefix);
  const endpoints = [];
  for (const url of urls) endpoints.push(await register(key, url));
  return { tenantId, key, endpoints };
}

/** Enqueues `count` events for every endpoint and makes one alarm run's deliveries with `fetch` and `clock`. */
async function oneRun(tenantId: string, count: number, fetch: typeof globalThis.fetch, clock: () => number = Date.now): Promise<number | undefined> {
  return runInDurableObject(env.TENANTS.getByName(tenantId), async (_instance: TenantObject, state) => {
    const webhooks = new TenantWebhooks(state.storage.sql);
    const now = Date.now();
    const events = Array.from({ length: count }, (_, index) => ({ id: `evt_${index.toString(16).padStart(32, "0")}`, type: "operation.settled" as const, body: `{"n":${index}}` }));
    webhooks.enqueue(events, now);
    return deliverDue(webhooks, { tenantId, secretsKey: env.SECRETS_KEY, allowLoopback: true, fetch }, now, clock);
  });
}

describe("a hanging webhook endpoint holds the tenant's alarm for one timeout at most", () => {
  it("its first timeout ends its turn: its other deliveries wait for the next run, another endpoint's are all sent", async () => {
    const { tenantId, key, endpoints } = await tenantWithEndpoints("whhold", ["http://127.0.0.1:9/hanging", "http://127.0.0.1:9/answering"]);
    const sent: string[] = [];
    const fetch = async (input: RequestInfo | URL): Promise<Response> => {
      const url = String(input);
      sent.push(url);
      return url.endsWith("/hanging") ? timeout() : new Response(null, { status: 204 });
    };
    const next = await oneRun(tenantId, 4, fetch);
    expect(sent.filter((url) => url.endsWith("/hanging"))).toHaveLength(1);
    expect(sent.filter((url) => url.endsWith("/answering"))).toHaveLength(4);
    const [hanging, answering] = endpoints;
    const held = await deliveries(key, hanging?.id ?? "");
    expect(held.map((delivery) => delivery.attempts).sort()).toEqual([0, 0, 0, 1]);
    expect(held.every((delivery) => delivery.status === "pending")).toBe(true);
    expect((await deliveries(key, answering?.id ?? "")).every((delivery) => delivery.status === "delivered")).toBe(true);
    // The three not tried are still due: the alarm comes back for them at once.
    expect(next).toBeLessThanOrEqual(Date.now());
  });

  it("no attempt starts once the run has spent its budget; the rest stay due for the next run", async () => {
    const { tenantId, key, endpoints } = await tenantWithEndpoints("whbudget", ["http://127.0.0.1:9/a", "http://127.0.0.1:9/b"]);
    let now = Date.now();
    const clock = () => now;
    let calls = 0;
    const fetch = async (): Promise<Response> => {
      calls += 1;
      // Each answer comes after the whole budget.
      now += DELIVERY_RUN_BUDGET_MS;
      return new Response(null, { status: 204 });
    };
    const next = await oneRun(tenantId, 3, fetch, clock);
    // The two endpoints' first attempts started together, before the budget was spent; nothing after.
    expect(calls).toBe(2);
    for (const endpoint of endpoints) {
      const log = await deliveries(key, endpoint.id);
      expect(log.filter((delivery) => delivery.status === "delivered")).toHaveLength(1);
      expect(log.filter((delivery) => delivery.status === "pending" && delivery.attempts === 0)).toHaveLength(2);
    }
    expect(next).toBeLessThanOrEqual(Date.now());
  });
});
