import { describe, expect, it } from "vitest";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";
import { deliveries, eventually, receivedAtLeast, receiver, register } from "./webhooks-helpers.ts";

// An `operation.settled` event id is derived from the session id, the operation id and the
// record's end, and the tenant remembers every id it enqueued for 8 days (webhook-event-ids.ts). A
// session id can be used again once the session is deleted (docs/api-sessions.md "Deletion"), and
// an operation id only has to be new in its session (docs/api-lanes.md): derived from those two
// alone, the new session's operation got the old event's id and was dropped as a repeat, so the
// endpoint was never told (docs/webhooks.md: "No event is lost").

describe("webhook event ids", () => {
  it("an operation of a session created again under a deleted one's id is delivered, even under a reused operation id", { timeout: 60_000 }, async () => {
    const setup = await laneSetup("evtids");
    const hook = receiver("evtids");
    const endpoint = await register(setup.key, hook.url("ok"));
    const operationId = uuidv7Ids.next();
    const first = await call(`${setup.lanePath}/prompt`, { body: { prompt: "first life", wait: 30, operationId }, token: setup.key });
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ operationId, status: "completed" });
    await receivedAtLeast(hook, 1);

    expect((await call(setup.sessionPath, { method: "DELETE", token: setup.key })).status).toBe(204);
    expect((await call("/v1/sessions", { body: { id: setup.sid }, token: setup.key })).status).toBe(201);
    expect((await call(setup.lanePath, { method: "PUT", token: setup.key })).status).toBe(201);
    // A new session: the id is fresh in it, so it is accepted.
    const second = await call(`${setup.lanePath}/prompt`, { body: { prompt: "second life", wait: 30, operationId }, token: setup.key });
    expect(second.status).toBe(200);
    expect(await second.json()).toMatchObject({ operationId, status: "completed" });

    // Two operations settled: two events, two deliveries.
    await eventually(async () => ((await deliveries(setup.key, endpoint.id)).length >= 2 ? true : undefined), "a delivery of the second operation", 10_000);
    const calls = await receivedAtLeast(hook, 2);
    expect(new Set(calls.map((call) => call.webhookId)).size).toBe(2);
  });
});
