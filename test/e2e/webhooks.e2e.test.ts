import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from "../node/webhook-receiver-setup.ts";
import { Api, appendSteps, createTenant, pollUntil, readAdminToken, scriptedSession, settled, startRun } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { importDocModule } from "./doc-blocks.ts";

// docs/webhooks.md against `npm start`: a tenant registers a loopback endpoint on a local Node
// receiver (local development allows loopback http), a scripted prompt settles, and the receiver
// gets `operation.settled` with a signature the docs' own verification example accepts.

type Verify = (secret: string, headers: Record<string, string | undefined>, rawBody: string) => boolean;

/** The signature check of docs/webhooks.md, loaded from the docs' own text. */
async function documentedVerifier(): Promise<Verify> {
  return (await importDocModule<{ verify: Verify }>("docs/webhooks.md")).verify;
}

describe("webhooks end to end", () => {
  let server: DevServer;
  let receiver: WebhookReceiver;
  let api: Api;
  let verify: Verify;

  beforeAll(async () => {
    verify = await documentedVerifier();
    receiver = await startWebhookReceiver();
    server = await startDevServer();
    api = (await createTenant(new Api(server.baseUrl, readAdminToken()), "hooks")).api;
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
  });

  it("a scripted prompt's settlement reaches a local receiver, signed as the docs describe, and is logged as delivered", async () => {
    const created = await api.expect<{ id: string; secret: string }>(201, "POST", "/v1/webhooks", {
      body: { url: `${receiver.url}/receive/e2e/ok`, events: ["operation.settled"] },
    });
    const sid = "hooks-e2e";
    await scriptedSession(api, sid);
    await appendSteps(api, sid, [{ text: "Settled, and you will hear of it." }]);
    const operationId = await startRun(api, sid, "tell my webhook");
    expect(await settled(api, sid, operationId)).toMatchObject({ status: "completed" });

    const calls = await pollUntil(
      "the receiver to get the delivery",
      async () => (await fetch(`${receiver.url}/requests/e2e`)).json() as Promise<ReceivedDelivery[]>,
      (received) => received.length >= 1,
      30_000,
    );
    const [delivery] = calls;
    if (!delivery) throw new Error("no delivery");
    const headers = { "webhook-timestamp": delivery.timestamp ?? undefined, "webhook-signature": delivery.signature ?? undefined };
    expect(verify(created.secret, headers, delivery.rawBody)).toBe(true);
    expect(verify("whsec_not-the-secret", headers, delivery.rawBody)).toBe(false);
    expect(JSON.parse(delivery.rawBody)).toEqual({
      id: delivery.webhookId,
      type: "operation.settled",
      createdAt: expect.any(Number),
      data: { sessionId: sid, lane: "main", operationId, kind: "run", status: "completed" },
    });

    const log = await pollUntil(
      "the delivery to be logged",
      () => api.expect<{ items: { eventId: string; status: string; lastStatusCode?: number }[] }>(200, "GET", `/v1/webhooks/${created.id}/deliveries`),
      (page) => page.items[0]?.status === "delivered",
    );
    expect(log.items).toEqual([expect.objectContaining({ eventId: delivery.webhookId, status: "delivered", lastStatusCode: 204, attempts: 1 })]);
  });
});
