import { describe, expect, it } from "vitest";
import { egressProblem } from "../../schema/egress-policy.ts";
import { call } from "./helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// One local-development switch, LOCAL_DEV: `npm start` writes it "on" into .dev.vars, wrangler.toml
// ships it "off". It lets every outbound URL (a tenant's provider base URL, an http tool's, an MCP
// server's, a webhook's) use plain http to a loopback host; off, all are https to a public host
// only (schema/egress-policy.ts). The test pool runs with it on.

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

  it("off (a deployment): the one egress policy refuses loopback for every URL", () => {
    for (const url of LOOPBACK) {
      expect(egressProblem(url, false, "baseUrl")?.rule, url).toBe("loopback");
      expect(egressProblem(url, true, "baseUrl"), url).toBeUndefined();
    }
    expect(egressProblem("https://proxy.example.com/v1", false, "baseUrl")).toBeUndefined();
  });
});
