import { describe, expect, it } from "vitest";
import { laneConfigCatalog, newLaneModel } from "../../durable-objects/session/lane-config-check.ts";
import { RpcError } from "../../durable-objects/rpc/rpc-errors.ts";
import { createModelRegistry, modelCatalog } from "../../models/registry.ts";
import type { ModelIdentity } from "../../schema/lane.ts";
import { call, errorCode, newTenant } from "./helpers.ts";

// Which model a new lane gets when its creation names none: the session's default model
// (`settings.defaultModel`), else the tenant's (`PUT /v1/me/default-model`), else the first model
// of the tenant's catalog (GET /v1/models; scripted/echo where scripted models are on). A default
// the tenant cannot use is refused when set (422 UnknownModel, nothing written), and one that
// became unusable since is named by the 422 of the lane creation that would use it.

const MINI: ModelIdentity = { provider: "openai", modelId: "gpt-4o-mini" };
const NANO: ModelIdentity = { provider: "openai", modelId: "gpt-4.1-nano" };
const ECHO: ModelIdentity = { provider: "scripted", modelId: "echo" };
const CLAUDE: ModelIdentity = { provider: "anthropic", modelId: "claude-sonnet-4-5" };

let counter = 0;

async function session(key: string, settings?: unknown): Promise<string> {
  const sid = `s_defaults_${(counter++).toString(36)}`;
  const created = await call("/v1/sessions", { body: { id: sid, ...(settings !== undefined && { settings }) }, token: key });
  expect(created.status).toBe(201);
  return `/v1/sessions/${sid}`;
}

/** Creates lane `name` without a model; the model it got, or the refusal. */
async function newLane(key: string, sessionPath: string, name: string): Promise<Response> {
  return call(`${sessionPath}/lanes/${name}`, { method: "PUT", token: key });
}

async function laneModel(key: string, sessionPath: string, name: string): Promise<ModelIdentity> {
  const created = await newLane(key, sessionPath, name);
  expect(created.status).toBe(201);
  const info = await (await call(`${sessionPath}/lanes/${name}`, { token: key })).json<{ configuration: { model: ModelIdentity } }>();
  return info.configuration.model;
}

async function me(key: string): Promise<{ defaultModel: ModelIdentity | null }> {
  return (await call("/v1/me", { token: key })).json();
}

describe("the tenant default model", () => {
  it("is set by PUT /v1/me/default-model, shown by GET /v1/me, taken by new lanes, and removed by DELETE", async () => {
    const tenant = await newTenant("defaults");
    expect((await me(tenant.key)).defaultModel).toBeNull();
    const put = await call("/v1/me/default-model", { method: "PUT", body: MINI, token: tenant.key });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual(MINI);
    expect((await me(tenant.key)).defaultModel).toEqual(MINI);
    const sessionPath = await session(tenant.key);
    expect(await laneModel(tenant.key, sessionPath, "a")).toEqual(MINI);

    expect((await call("/v1/me/default-model", { method: "DELETE", token: tenant.key })).status).toBe(204);
    expect((await me(tenant.key)).defaultModel).toBeNull();
    expect(await laneModel(tenant.key, sessionPath, "b")).toEqual(ECHO);
  });

  it("refuses a model the tenant cannot use (422 UnknownModel) or a malformed body (400), writing nothing", async () => {
    const tenant = await newTenant("defaults");
    for (const model of [CLAUDE, { provider: "openai", modelId: "no-such-model" }, { provider: "nosuch", modelId: "x" }]) {
      const refused = await call("/v1/me/default-model", { method: "PUT", body: model, token: tenant.key });
      expect(refused.status, JSON.stringify(model)).toBe(422);
      expect(await errorCode(refused)).toBe("UnknownModel");
    }
    const malformed = await call("/v1/me/default-model", { method: "PUT", body: { provider: "openai" }, token: tenant.key });
    expect(malformed.status).toBe(400);
    expect((await me(tenant.key)).defaultModel).toBeNull();
  });

  it("that became unusable (its key deleted) makes a lane creation without a model 422 naming it", async () => {
    const tenant = await newTenant("defaults");
    expect((await call("/v1/providers/anthropic", { method: "PUT", body: { apiKey: "sk-ant-defaults-key-1234" }, token: tenant.key })).status).toBe(200);
    expect((await call("/v1/me/default-model", { method: "PUT", body: CLAUDE, token: tenant.key })).status).toBe(200);
    const sessionPath = await session(tenant.key);
    expect(await laneModel(tenant.key, sessionPath, "a")).toEqual(CLAUDE);

    expect((await call("/v1/providers/anthropic", { method: "DELETE", token: tenant.key })).status).toBe(204);
    const refused = await newLane(tenant.key, sessionPath, "b");
    expect(refused.status).toBe(422);
    const body = await refused.json<{ error: { code: string; message: string; details: unknown } }>();
    expect(body.error.code).toBe("UnknownModel");
    expect(body.error.message).toContain("anthropic/claude-sonnet-4-5");
    expect(body.error.message).toContain("tenant's default model");
    expect(body.error.details).toEqual(CLAUDE);
    expect((await call(`${sessionPath}/lanes/b`, { token: tenant.key })).status).toBe(404);
    // A model named at creation still works.
    expect((await call(`${sessionPath}/lanes/b`, { method: "PUT", body: { model: ECHO }, token: tenant.key })).status).toBe(201);
  });
});

describe("the session default model", () => {
  it("is set by PATCH settings.defaultModel, beats the tenant default, and null removes it", async () => {
    const tenant = await newTenant("defaults");
    expect((await call("/v1/me/default-model", { method: "PUT", body: MINI, token: tenant.key })).status).toBe(200);
    const sessionPath = await session(tenant.key);
    const patched = await call(sessionPath, { method: "PATCH", body: { settings: { defaultModel: NANO } }, token: tenant.key });
    expect(patched.status).toBe(200);
    expect((await patched.json<{ settings: { defaultModel: unknown } }>()).settings.defaultModel).toEqual(NANO);
    expect(await laneModel(tenant.key, sessionPath, "a")).toEqual(NANO);

    expect((await call(sessionPath, { method: "PATCH", body: { settings: { defaultModel: null } }, token: tenant.key })).status).toBe(200);
    expect(await laneModel(tenant.key, sessionPath, "b")).toEqual(MINI);
  });

  it("is accepted at creation (POST /v1/sessions settings.defaultModel)", async () => {
    const tenant = await newTenant("defaults");
    const sessionPath = await session(tenant.key, { defaultModel: NANO });
    expect(await laneModel(tenant.key, sessionPath, "a")).toEqual(NANO);
  });

  it("a model the tenant cannot use is 422 UnknownModel at creation and on PATCH, and nothing is written", async () => {
    const tenant = await newTenant("defaults");
    const created = await call("/v1/sessions", { body: { id: "s_defaults_refused", settings: { defaultModel: CLAUDE } }, token: tenant.key });
    expect(created.status).toBe(422);
    expect(await errorCode(created)).toBe("UnknownModel");
    expect((await call("/v1/sessions/s_defaults_refused", { token: tenant.key })).status).toBe(404);

    const sessionPath = await session(tenant.key);
    const patched = await call(sessionPath, { method: "PATCH", body: { name: "renamed", settings: { defaultModel: CLAUDE } }, token: tenant.key });
    expect(patched.status).toBe(422);
    expect(await errorCode(patched)).toBe("UnknownModel");
    const view = await (await call(sessionPath, { token: tenant.key })).json<{ name: string | null; settings: { defaultModel: unknown } }>();
    expect(view).toMatchObject({ name: null, settings: { defaultModel: null } });
  });
});

describe("without any default", () => {
  it("a new lane takes scripted/echo where scripted models are on", async () => {
    const tenant = await newTenant("defaults");
    expect(await laneModel(tenant.key, await session(tenant.key), "a")).toEqual(ECHO);
  });

  it("the first model of the tenant's catalog is taken: GET /v1/models's first row", () => {
    const usableProviders = new Set(["openai"]);
    const first = modelCatalog(createModelRegistry({ scripted: false }), usableProviders)[0];
    expect(first).toBeDefined();
    const catalog = laneConfigCatalog({ scripted: false, usableProviders });
    expect(newLaneModel(catalog, { session: null, tenant: null })).toEqual({ provider: first?.provider, modelId: first?.modelId });
  });

  it("with nothing usable, lane creation without a model is 422 UnknownModel saying no model is configured", () => {
    const catalog = laneConfigCatalog({ scripted: false, usableProviders: new Set() });
    let thrown: unknown;
    try {
      newLaneModel(catalog, { session: null, tenant: null });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RpcError);
    const error = thrown instanceof RpcError ? thrown.error : undefined;
    expect(error?.code).toBe("UnknownModel");
    expect(error?.message).toMatch(/No model is configured/);
  });
});
