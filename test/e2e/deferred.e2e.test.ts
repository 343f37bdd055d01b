import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from "../node/webhook-receiver-setup.ts";
import { Api, appendSteps, createTenant, pollUntil, readAdminToken, scriptedSession, startRun } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// A deferred run against `npm start`, driven by the cron as in a deployment: the scripted model
// defers its answer, the run suspends, the minute cron (which npm start fires at the start of each
// minute, as the platform would; wrangler dev alone never does) polls it, it completes, and the
// tenant's local webhook receiver gets `operation.settled`. Nothing here fires the cron by hand.

describe("a deferred run resumed by the cron (npm start)", () => {
  let server: DevServer;
  let receiver: WebhookReceiver;
  let api: Api;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startDevServer();
    api = (await createTenant(new Api(server.baseUrl, readAdminToken()), "deferred")).api;
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
  });

  it("suspends, is polled by the minute cron npm start fires, completes, and the tenant's webhook hears of it", async () => {
    await api.expect(201, "POST", "/v1/webhooks", { body: { url: `${receiver.url}/receive/deferred/ok`, events: ["operation.settled"] } });
    const sid = "deferred-e2e";
    await scriptedSession(api, sid);
    await appendSteps(api, sid, [{ deferred: { ready: { text: "Here is the answer you waited for." } } }]);
    const operationId = await startRun(api, sid, "answer when you can");
    await pollUntil(
      "the run to suspend",
      () => api.expect<{ state: string; at?: string }>(200, "GET", `/v1/sessions/${sid}/lanes/main/operations/${operationId}`),
      (view) => view.at === "deferred.suspended",
    );
    // The next minute's tick finds the registration (forwarded right after the suspending commit).
    const view = await pollUntil(
      "the minute cron to resume the run",
      () => api.expect<{ state: string; result?: { status: string } }>(200, "GET", `/v1/sessions/${sid}/lanes/main/operations/${operationId}?wait=5`),
      (answer) => answer.state === "settled",
      150_000,
    );
    expect(view.result?.status).toBe("completed");
    const received = await pollUntil(
      "the settled webhook",
      async () => (await fetch(`${receiver.url}/requests/deferred`)).json() as Promise<ReceivedDelivery[]>,
      (deliveries) => deliveries.length >= 1,
      30_000,
    );
    expect(JSON.parse(received[0]?.rawBody ?? "{}")).toMatchObject({ type: "operation.settled", data: { sessionId: sid, operationId, status: "completed" } });
    // The sweep logs its line once every shard answered, which may be after the run settled.
    await pollUntil("the sweep's log line", async () => server.output(), (output) => output.includes('"event":"deferred_sweep"'), 30_000);
  }, 240_000);
});
