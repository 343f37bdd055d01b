import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";

// Deferred runs over REST (spec/API.md "Operations"): the prompt convenience answers a suspended
// run with its handle, the run holds no alarm while it waits, `resume` grants one poll, and an
// abort ends a suspended run.

const deferredStep = (ready: { text: string }) => ({ deferred: { ready } });

describe("deferred runs over REST", () => {
  it("prompt answers suspended with the handle; the alarm does not poll it; resume polls it to completion", async () => {
    const setup = await laneSetup("dfr");
    await useScript(setup, [deferredStep({ text: "ready later" })]);
    const prompted = await call(`${setup.lanePath}/prompt`, { body: { prompt: "take your time", wait: 30 }, token: setup.key });
    expect(prompted.status).toBe(200);
    const suspended = await prompted.json<{ status: string; operationId: string; deferred: { provider: string; id: string } }>();
    expect(suspended).toMatchObject({ status: "suspended", deferred: { provider: "scripted" } });
    const active = await (await call(`${setup.lanePath}/operations/${suspended.operationId}`, { token: setup.key })).json<{ state: string; at: string }>();
    expect(active).toMatchObject({ state: "active", at: "deferred.suspended", deferred: { poll: 0, handle: { id: suspended.deferred.id } } });
    // Nothing is due until a permit arrives: the alarm left from the acceptance fires without
    // polling the handle, and is not armed again.
    const object = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
    await runDurableObjectAlarm(object);
    expect(await runDurableObjectAlarm(object)).toBe(false);
    const still = await (await call(`${setup.lanePath}/operations/${suspended.operationId}`, { token: setup.key })).json<{ state: string; at: string }>();
    expect(still).toMatchObject({ state: "active", at: "deferred.suspended", deferred: { poll: 0 } });
    const resumed = await call(`${setup.lanePath}/operations/${suspended.operationId}/resume?wait=30`, { method: "POST", token: setup.key });
    expect(resumed.status).toBe(200);
    expect(await resumed.json()).toMatchObject({ state: "settled", result: { kind: "run", status: "completed" } });
  });

  it("an abort ends a suspended run aborted", async () => {
    const setup = await laneSetup("dfa");
    await useScript(setup, [deferredStep({ text: "never fetched" })]);
    const { operationId } = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "later", wait: 30 }, token: setup.key })).json<{ operationId: string }>();
    const aborted = await call(`${setup.lanePath}/abort?wait=10`, { method: "POST", token: setup.key });
    expect(aborted.status).toBe(200);
    expect(await aborted.json()).toMatchObject({ operationId, record: { status: "aborted" } });
  });
});
