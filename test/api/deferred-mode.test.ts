import { describe, expect, it } from "vitest";
import { adminToken, call } from "./helpers.ts";
import { execution, laneSetup, useScript } from "./lane-helpers.ts";

// Choosing deferred answers over REST: per run (`deferred` on the request) or per session
// (`settings.streamOptions.deferred`). A model that cannot answer deferred is refused where the
// choice is made: 422 DeferredUnsupported, nothing written.

const ECHO = { provider: "scripted", modelId: "echo" };

async function settings(setup: { key: string; sessionPath: string }): Promise<{ streamOptions: Record<string, unknown> }> {
  const session = await (await call(setup.sessionPath, { token: setup.key })).json<{ settings: { streamOptions: Record<string, unknown> } }>();
  return session.settings;
}

describe("deferred mode", () => {
  it("a deferred prompt on a model that cannot defer is 422 DeferredUnsupported and places nothing", async () => {
    const setup = await laneSetup("dmp");
    const before = await execution(setup);
    const refused = await call(`${setup.lanePath}/prompt`, { body: { prompt: "later please", deferred: true, wait: 5 }, token: setup.key });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: { code: "DeferredUnsupported", details: { lanes: ["main"] } } });
    const primitive = await call(`${setup.lanePath}/operations`, { body: { kind: "prompt", prompt: "later", deferred: { window: "24h" } }, token: setup.key });
    expect(primitive.status).toBe(422);
    expect((await execution(setup)).tipId).toBe(before.tipId);
  });

  it("a refused deferred prompt holds no open-operation slot: the tenant's only slot is free for the next run", async () => {
    const setup = await laneSetup("dmq");
    expect((await call(`/v1/admin/tenants/${setup.tenantId}/quotas`, { method: "PATCH", body: { maxOpenOperations: 1 }, token: adminToken() })).status).toBe(200);
    for (const _ of [1, 2]) expect((await call(`${setup.lanePath}/prompt`, { body: { prompt: "later", deferred: true }, token: setup.key })).status).toBe(422);
    const live = await call(`${setup.lanePath}/prompt`, { body: { prompt: "now", wait: 30 }, token: setup.key });
    expect(live.status).toBe(200);
    expect(await live.json()).toMatchObject({ status: "completed" });
  });

  it("turning deferred on for the session is refused while a lane's model cannot defer", async () => {
    const setup = await laneSetup("dms");
    const refused = await call(setup.sessionPath, { method: "PATCH", body: { settings: { streamOptions: { deferred: true } } }, token: setup.key });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: { code: "DeferredUnsupported" } });
    expect((await settings(setup)).streamOptions).not.toHaveProperty("deferred");
  });

  it("turning deferred on while a lane switches to a model that cannot defer: never both", async () => {
    for (let round = 0; round < 5; round++) {
      const setup = await laneSetup(`dmr${round}`);
      await useScript(setup, []);
      const [session, lane] = await Promise.all([
        call(setup.sessionPath, { method: "PATCH", body: { settings: { streamOptions: { deferred: true } } }, token: setup.key }),
        call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: ECHO }, token: setup.key }),
      ]);
      const deferred = (await settings(setup)).streamOptions.deferred === true;
      const model = (await execution(setup)).configuration.model;
      // One of the two is refused (422 DeferredUnsupported): a deferring session never holds a lane that cannot defer.
      expect([session.status, lane.status].sort()).toEqual([200, 422]);
      expect(deferred && model.modelId === "echo").toBe(false);
    }
  });

  it("on a deferring session a lane cannot switch to, or be created on, a model that cannot defer", async () => {
    const setup = await laneSetup("dml");
    await useScript(setup, []);
    const on = await call(setup.sessionPath, { method: "PATCH", body: { settings: { streamOptions: { deferred: true } } }, token: setup.key });
    expect(on.status).toBe(200);
    const switched = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { model: ECHO }, token: setup.key });
    expect(switched.status).toBe(422);
    expect(await switched.json()).toMatchObject({ error: { code: "DeferredUnsupported" } });
    expect((await execution(setup)).configuration.model).toEqual({ provider: "scripted", modelId: "script" });
    const created = await call(`${setup.sessionPath}/lanes/other`, { method: "PUT", body: { model: ECHO }, token: setup.key });
    expect(created.status).toBe(422);
    expect((await call(`${setup.sessionPath}/lanes/other`, { token: setup.key })).status).toBe(404);
  });

  it("a deferred prompt on a model that can defer is accepted and runs", async () => {
    const setup = await laneSetup("dmy");
    await useScript(setup, [{ deferred: { ready: { text: "ready later" } } }]);
    const prompted = await call(`${setup.lanePath}/prompt`, { body: { prompt: "take your time", deferred: true, wait: 30 }, token: setup.key });
    expect(prompted.status).toBe(200);
    expect(await prompted.json()).toMatchObject({ status: "suspended", deferred: { provider: "scripted" } });
  });
});
