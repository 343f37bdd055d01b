import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";

// docs/api-lanes.md "Deferred runs": asking a model that cannot answer deferred is 422
// DeferredUnsupported, refused where deferred mode is chosen, never a run that quietly answers
// live. A pending run (`ifBusy: "enqueue"`) that asked for a deferred answer starts on its lane's
// model of its turn; a suspended run ahead of it may hold the lane for hours. Switching the lane
// to a model that cannot defer was accepted, and the pending run then answered live. The switch
// is now checked against the pending runs' modes too, as against the session's.

describe("a lane model switch while a pending run waits for a deferred answer", () => {
  it("is refused 422 DeferredUnsupported, and the lane keeps its model", async () => {
    const setup = await laneSetup("dpm_switch");
    await useScript(setup, [{ deferred: { ready: { text: "the suspended run's answer" } } }]);
    const suspended = await (await call(`${setup.lanePath}/prompt`, { body: { prompt: "first", wait: 30 }, token: setup.key })).json<{ status: string; operationId: string }>();
    expect(suspended.status).toBe("suspended");

    // A run that wants the batch price waits behind the suspended one.
    const enqueued = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "answer me later, cheaply", ifBusy: "enqueue", deferred: true }, token: setup.key });
    expect(enqueued.status).toBe(202);
    const pending = await enqueued.json<{ operationId: string; state: string }>();
    expect(pending.state).toBe("pending");

    const patched = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "echo" } }, token: setup.key });
    expect(patched.status).toBe(422);
    expect(await patched.json()).toMatchObject({ error: { code: "DeferredUnsupported" } });
    const lane = await (await call(setup.lanePath, { token: setup.key })).json<{ configuration: { model: { modelId: string } } }>();
    expect(lane.configuration.model.modelId).toBe("script");

    // Once the pending run is gone, nothing asks for deferred answers: the switch is taken.
    expect((await call(`${setup.lanePath}/operations/${pending.operationId}/abort`, { method: "POST", token: setup.key })).status).toBeLessThan(300);
    expect((await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: { provider: "scripted", modelId: "echo" } }, token: setup.key })).status).toBe(200);
  });
});
