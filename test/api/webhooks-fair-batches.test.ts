import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { TenantWebhooks } from "../../durable-objects/tenant/webhooks/tenant-webhooks.ts";
import { DELIVERIES_PER_ENDPOINT_RUN, DELIVERY_BATCH, deliverDue } from "../../durable-objects/tenant/webhooks/webhook-delivery.ts";
import { newTenant } from "./helpers.ts";
import { register } from "./webhooks-helpers.ts";

// docs/webhooks.md, "Retries": deliveries are sent "each endpoint's one at a time [...] so one slow
// endpoint does not hold up the others". A run's batch is picked across endpoints (every
// endpoint's oldest due first) and its endpoints are served least recently attempted first, so
// endpoints with an older backlog that answer slowly (within the 10 s timeout, so they are never
// cut off) do not keep another endpoint's due delivery out of run after run.

describe("endpoints with a backlog", () => {
  it("do not keep another endpoint's due delivery out of run after run", async () => {
    const { tenantId, key } = await newTenant("whfair");
    // Four busy endpoints, each on its own host, subscribed to operation.settled; a fifth to operation.suspended.
    for (const host of ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"]) await register(key, `http://${host}:9/busy`);
    await register(key, "http://127.0.0.5:9/quiet", ["operation.suspended"]);
    const runs = await runInDurableObject(env.TENANTS.getByName(tenantId), async (_instance: TenantObject, state) => {
      const webhooks = new TenantWebhooks(state.storage.sql);
      const start = Date.now();
      const backlog = Array.from({ length: 40 }, (_, i) => ({ id: `evt_${i.toString(16).padStart(32, "0")}`, type: "operation.settled" as const, body: `{"n":${i}}` }));
      webhooks.enqueue(backlog, start - 1000);
      webhooks.enqueue([{ id: `evt_${"f".repeat(32)}`, type: "operation.suspended", body: "{}" }], start);
      // Every busy endpoint answers 2xx after 9 s (the run's clock advances; nothing waits).
      let clock = start;
      let quietAttemptedInRun = 0;
      let run = 0;
      const fetch = async (input: RequestInfo | URL): Promise<Response> => {
        if (String(input).includes("/quiet")) quietAttemptedInRun = quietAttemptedInRun || run;
        else clock += 9_000;
        return new Response(null, { status: 204 });
      };
      for (run = 1; run <= 20 && quietAttemptedInRun === 0; run++) {
        await deliverDue(webhooks, { tenantId, secretsKey: env.SECRETS_KEY, allowLoopback: true, fetch }, clock, () => clock);
      }
      return quietAttemptedInRun;
    });
    // The quiet endpoint's delivery, due since the start, is attempted in the first run or the next one.
    expect(runs).toBeGreaterThan(0);
    expect(runs).toBeLessThanOrEqual(2);
  });

  it("share a run's batch: every endpoint's oldest due first, each endpoint's own deliveries in the order they are due", async () => {
    const { tenantId, key } = await newTenant("whfairbatch");
    const hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"];
    for (const host of hosts) await register(key, `http://${host}:9/batch`);
    const batch = await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
      const webhooks = new TenantWebhooks(state.storage.sql);
      const start = Date.now();
      for (let i = 0; i < 10; i++) webhooks.enqueue([{ id: `evt_${i.toString(16).padStart(32, "0")}`, type: "operation.settled", body: `{"n":${i}}` }], start - 10_000 + i);
      return webhooks.due(start, DELIVERY_BATCH, DELIVERIES_PER_ENDPOINT_RUN).map((delivery) => ({ endpointId: delivery.endpointId, due: delivery.nextAttemptAt }));
    });
    expect(batch).toHaveLength(DELIVERY_BATCH);
    // Every endpoint is in the batch with its oldest due delivery, before any endpoint's second.
    const firstRound = batch.slice(0, hosts.length);
    expect(new Set(firstRound.map((item) => item.endpointId)).size).toBe(hosts.length);
    expect(firstRound.every((item) => item.due === firstRound[0]?.due)).toBe(true);
    for (const endpointId of new Set(batch.map((item) => item.endpointId))) {
      const dues = batch.filter((item) => item.endpointId === endpointId).map((item) => item.due);
      expect(dues).toEqual([...dues].sort((a, b) => a - b));
    }
  });
});
