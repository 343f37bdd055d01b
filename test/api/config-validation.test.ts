import { describe, expect, it } from "vitest";
import { laneConfigCatalog, assertKnownConfiguration, newLaneModel } from "../../durable-objects/session/lane-config-check.ts";
import { RpcError } from "../../durable-objects/rpc/rpc-errors.ts";
import type { LaneExecutionInfo, LaneInfo } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { execution, laneSetup } from "./lane-helpers.ts";

// Configuration is validated when it is set: an unknown model or tool is a 422 naming it, and
// nothing is written, instead of a 200 now and a run that fails later.

interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

const ECHO = { provider: "scripted", modelId: "echo" };
const SCRIPT = { provider: "scripted", modelId: "script" };

describe("PATCH …/lanes/{lane}/config", () => {
  it("refuses an unknown model with 422 UnknownModel naming it, and leaves the configuration as it was", async () => {
    const { key, lanePath } = await laneSetup("cfg_model");
    const before = await execution({ key, lanePath });
    for (const model of [{ provider: "scripted", modelId: "nope" }, { provider: "openai", modelId: "gpt-nonexistent" }]) {
      const refused = await call(`${lanePath}/config`, { method: "PATCH", body: { model, thinkingLevel: "high" }, token: key });
      expect(refused.status).toBe(422);
      const body = await refused.json<ErrorBody>();
      expect(body.error.code).toBe("UnknownModel");
      expect(body.error.details).toEqual(model);
      expect(body.error.message).toContain(`${model.provider}/${model.modelId}`);
    }
    expect((await execution({ key, lanePath })).configuration).toEqual(before.configuration);
  });

  it("refuses active tools the session does not define with 422 UnknownTool naming each (a repeated name is 400 before)", async () => {
    const { key, lanePath } = await laneSetup("cfg_tools");
    expect((await call(`${lanePath}/config`, { method: "PATCH", body: { model: SCRIPT, activeTools: ["search", "read", "search"] }, token: key })).status).toBe(400);
    const refused = await call(`${lanePath}/config`, { method: "PATCH", body: { model: SCRIPT, activeTools: ["search", "read"] }, token: key });
    expect(refused.status).toBe(422);
    const body = await refused.json<ErrorBody>();
    expect(body.error.code).toBe("UnknownTool");
    expect(body.error.details).toEqual({ tools: ["search", "read"] });
    expect(body.error.message).toContain("search, read");
    // The valid model of the same request was not written either.
    expect((await execution({ key, lanePath })).configuration).toEqual({ model: ECHO, thinkingLevel: "off", activeToolNames: [] });
  });

  it("accepts a known model and an empty tool list", async () => {
    const { key, lanePath } = await laneSetup("cfg_ok");
    const patched = await call(`${lanePath}/config`, { method: "PATCH", body: { model: SCRIPT, activeTools: [] }, token: key });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toEqual({ model: SCRIPT, thinkingLevel: "off", activeToolNames: [] });
  });
});

describe("PUT …/lanes/{lane} with a configuration", () => {
  it("creates the lane with the named model, thinking level and tools", async () => {
    const { key, sessionPath } = await laneSetup("cfg_put");
    const created = await call(`${sessionPath}/lanes/side`, { method: "PUT", body: { model: SCRIPT, thinkingLevel: "low", activeTools: [] }, token: key });
    expect(created.status).toBe(201);
    const info = await execution({ key, lanePath: `${sessionPath}/lanes/side` });
    expect(info.configuration).toEqual({ model: SCRIPT, thinkingLevel: "low", activeToolNames: [] });
  });

  it("refuses an unknown model or tool with 422 and creates no lane", async () => {
    const { key, sessionPath } = await laneSetup("cfg_put_bad");
    const model = await call(`${sessionPath}/lanes/side`, { method: "PUT", body: { model: { provider: "scripted", modelId: "nope" } }, token: key });
    expect(model.status).toBe(422);
    expect((await model.json<ErrorBody>()).error.code).toBe("UnknownModel");
    const tools = await call(`${sessionPath}/lanes/side`, { method: "PUT", body: { activeTools: ["search"] }, token: key });
    expect(tools.status).toBe(422);
    expect((await tools.json<ErrorBody>()).error).toMatchObject({ code: "UnknownTool", details: { tools: ["search"] } });
    const lanes = await (await call(`${sessionPath}/lanes`, { token: key })).json<{ items: LaneInfo[] }>();
    expect(lanes.items.map((lane) => lane.name)).toEqual(["main"]);
  });

  it("keeps an existing lane's configuration (like createAt) but still refuses what is unknown", async () => {
    const { key, sessionPath, lanePath } = await laneSetup("cfg_put_existing");
    const again = await call(lanePath, { method: "PUT", body: { model: SCRIPT }, token: key });
    expect(again.status).toBe(200);
    expect((await execution({ key, lanePath })).configuration.model).toEqual(ECHO);
    const unknown = await call(`${sessionPath}/lanes/main`, { method: "PUT", body: { model: { provider: "x", modelId: "y" } }, token: key });
    expect(unknown.status).toBe(422);
    const info: LaneExecutionInfo = await execution({ key, lanePath });
    expect(info.configuration.model).toEqual(ECHO);
  });
});

describe("the lane configuration catalog", () => {
  const refusal = (work: () => void): unknown => {
    try {
      work();
      return undefined;
    } catch (error) {
      return error instanceof RpcError ? error.error : error;
    }
  };

  it("knows exactly the models of the engine's registry: none of the scripted ones when they are off", () => {
    expect(laneConfigCatalog({ scripted: true }).hasModel(ECHO)).toBe(true);
    expect(laneConfigCatalog({ scripted: false }).hasModel(ECHO)).toBe(false);
  });

  it("refuses to create a lane on a default model the deployment does not offer, naming it", () => {
    const catalog = laneConfigCatalog({ scripted: false });
    expect(refusal(() => newLaneModel(catalog, { session: ECHO, tenant: null }))).toMatchObject({ code: "UnknownModel", details: ECHO, message: expect.stringContaining("scripted/echo") });
    expect(refusal(() => newLaneModel(laneConfigCatalog({ scripted: true }), { session: ECHO, tenant: null }))).toBeUndefined();
  });

  it("takes its tool names from the knownTools seam, so a tool registry can plug in", () => {
    const catalog = laneConfigCatalog({ scripted: true }, () => new Set(["read"]));
    expect(refusal(() => assertKnownConfiguration({ activeTools: ["read"] }, catalog))).toBeUndefined();
    expect(refusal(() => assertKnownConfiguration({ activeTools: ["read", "write"] }, catalog))).toMatchObject({ code: "UnknownTool", details: { tools: ["write"] } });
  });
});
