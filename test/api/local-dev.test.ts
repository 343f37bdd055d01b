import { describe, expect, it } from "vitest";
import { baseUrlProblem } from "../../schema/providers.ts";
import { toolUrlProblem } from "../../tools/tool-url.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// One local-development switch, LOCAL_DEV: `npm start` writes it "on" into .dev.vars, wrangler.toml
// ships it "off". It lets both a tenant's provider base URL and an http tool's URL use plain http
// to a loopback host; off, both are https only. The test pool runs with it on.

const LOOPBACK = ["http://localhost:11434/v1", "http://127.0.0.1:9999/v1", "http://[::1]:8080/v1"];
const ARGS_SCHEMA = { type: "object", properties: { q: { type: "string" } } };

describe("the LOCAL_DEV switch", () => {
  it("on: a provider base URL and an http tool URL may both be plain http to a loopback host", async () => {
    const setup = await laneSetup("localdev");
    const provider = await call("/v1/providers/anthropic", { method: "PUT", body: { apiKey: "sk-ant-local-dev-key-0000", baseUrl: "http://127.0.0.1:9999/v1" }, token: setup.key });
    expect(provider.status).toBe(200);
    expect(await provider.json()).toMatchObject({ provider: "anthropic", baseUrl: "http://127.0.0.1:9999/v1" });
    const tool = await call(`${setup.sessionPath}/tools/lookup`, { method: "PUT", body: { kind: "http", description: "d", parameters: ARGS_SCHEMA, url: "http://127.0.0.1:9999/lookup" }, token: setup.key });
    expect(tool.status).toBe(201);
  });

  it("on: plain http to any other host is still refused for both", async () => {
    const setup = await laneSetup("localdev");
    const provider = await call("/v1/providers/anthropic", { method: "PUT", body: { apiKey: "sk-ant-local-dev-key-0000", baseUrl: "http://192.168.1.5/v1" }, token: setup.key });
    expect(provider.status).toBe(422);
    const tool = await call(`${setup.sessionPath}/tools/lookup`, { method: "PUT", body: { kind: "http", description: "d", parameters: ARGS_SCHEMA, url: "http://tools.example.com/lookup" }, token: setup.key });
    expect(tool.status).toBe(400);
  });

  it("off (a deployment): both checks allow https only", () => {
    for (const url of LOOPBACK) {
      expect(baseUrlProblem(url, false), url).toBe("baseUrl must be an https URL");
      expect(toolUrlProblem(url, false), url).toBe("url must use https");
      expect(baseUrlProblem(url, true), url).toBeUndefined();
      expect(toolUrlProblem(url, true), url).toBeUndefined();
    }
    expect(baseUrlProblem("https://proxy.example.com/v1", false)).toBeUndefined();
    expect(toolUrlProblem("https://tools.example.com/lookup", false)).toBeUndefined();
  });
});
