import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { TenantWebhooks, type DueDelivery } from "../../durable-objects/tenant/webhooks/tenant-webhooks.ts";
import { deliverDue } from "../../durable-objects/tenant/webhooks/webhook-delivery.ts";
import { newTenant } from "./helpers.ts";
import { register } from "./webhooks-helpers.ts";

// docs/webhooks.md: "Deleting an endpoint drops its pending deliveries and its delivery log:
// nothing more is sent to it." The alarm opens the endpoint's sealed secret and signs the body
// between finding a delivery still due and sending it; the object answers other calls during those
// awaits, and a DELETE (or a PATCH {"enabled":false}) answered then is not followed by a POST.

/** The outbox as the alarm sees it, with the tenant's DELETE arriving at the next await after a delivery was found still due. */
class DeletedRightAfterTheCheck extends TenantWebhooks {
  deleted: string[] = [];
  override stillDue(delivery: DueDelivery): boolean {
    const due = super.stillDue(delivery);
    if (due && this.deleted.length === 0) {
      void Promise.resolve().then(() => {
        this.delete(delivery.endpointId);
        this.deleted.push(delivery.endpointId);
      });
    }
    return due;
  }
}

describe("deleting an endpoint while the alarm is about to send to it", () => {
  it("sends nothing once the DELETE has been applied", async () => {
    const { tenantId, key } = await newTenant("whdelsend");
    await register(key, "http://127.0.0.1:9/delete-during-delivery");
    const outcome = await runInDurableObject(env.TENANTS.getByName(tenantId), async (_instance: TenantObject, state) => {
      const webhooks = new DeletedRightAfterTheCheck(state.storage.sql);
      webhooks.enqueue([{ id: `evt_${"d".repeat(32)}`, type: "operation.settled", body: "{}" }], Date.now());
      const sentAfterDelete: boolean[] = [];
      const fetch = async (): Promise<Response> => {
        sentAfterDelete.push(webhooks.deleted.length > 0);
        return new Response(null, { status: 204 });
      };
      await deliverDue(webhooks, { tenantId, secretsKey: env.SECRETS_KEY, allowLoopback: true, fetch }, Date.now());
      return { deleted: webhooks.deleted.length, sentAfterDelete };
    });
    expect(outcome.deleted).toBe(1);
    // No POST goes out after the endpoint was deleted.
    expect(outcome.sentAfterDelete).toEqual([]);
  });
});
