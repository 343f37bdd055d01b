import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../../client/index.ts";
import { newTenant } from "./helpers.ts";
import { eventually, receiver } from "./webhooks-helpers.ts";

// The SDK's webhooks area against the real app in workerd: create (secret once), list, the
// delivery log after a settled prompt, disable and re-enable, delete.

describe("client SDK: webhooks", () => {
  it("creates an endpoint, reads its delivery log after a prompt, lists and deletes it", async () => {
    const tenant = await newTenant("sdk_hooks");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const hook = receiver("sdk");
    const created = await client.webhooks.create({ url: hook.url("ok"), events: ["operation.settled"] });
    expect(created.secret).toMatch(/^whsec_/);
    expect(await client.webhooks.list()).toEqual([{ id: created.id, url: created.url, events: ["operation.settled"], createdAt: created.createdAt, status: "enabled" }]);
    expect(isApiError(await client.webhooks.create({ url: hook.url("ok"), events: ["operation.settled"] }).catch((error: unknown) => error), "WebhookExists")).toBe(true);

    const session = await client.sessions.create();
    await client.lanes.put(session.id, "main");
    const outcome = await client.prompt(session.id, "main", "hello", { wait: 30 });
    expect(outcome.state).toBe("settled");
    const delivered = await eventually(async () => {
      const page = await client.webhooks.deliveries(created.id, { limit: 10 });
      return page.items[0]?.status === "delivered" ? page : undefined;
    }, "the delivery");
    expect(delivered.nextCursor).toBeNull();
    const all = [];
    for await (const delivery of client.webhooks.allDeliveries(created.id, { limit: 1 })) all.push(delivery);
    expect(all).toHaveLength(1);

    const disabled = await client.webhooks.patch(created.id, { enabled: false });
    expect(disabled).toMatchObject({ status: "disabled", disabledReason: expect.any(String) });
    expect(await client.webhooks.patch(created.id, { enabled: true, events: ["operation.suspended"] })).toEqual({
      id: created.id, url: created.url, events: ["operation.suspended"], createdAt: created.createdAt, status: "enabled",
    });

    await client.webhooks.delete(created.id);
    expect(isApiError(await client.webhooks.delete(created.id).catch((error: unknown) => error), "NotFound")).toBe(true);
    expect(await client.webhooks.list()).toEqual([]);
  });
});
