import { describe, expect, it } from "vitest";
import { MCP_DISCOVERY_TIMEOUT_MS } from "../../tools/mcp-discovery.ts";
import { call } from "./helpers.ts";
import { closedUrl, fixturesUrl } from "./egress-helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { registerMcpServer } from "./mcp-helpers.ts";
import { activate, ARGS_SCHEMA, prompt, putTool, resultTexts, settle } from "./tool-api-helpers.ts";
import { deliveries, eventually, register, settledPrompt } from "./webhooks-helpers.ts";

// Issue 30 item 9: a connection refused (a closed loopback port), a connection reset before any
// answer, and no answer in time each read as one documented sentence (tools/outbound-failure.ts,
// docs/security.md) for http tools, MCP servers and webhook deliveries — never the runtime's text
// ("Network connection lost.", "internal error; reference = …"), which would also tell a tenant
// which ports of a host are open.

const refusedUrl = (path: string): string => `${closedUrl()}${path}`;
const resetUrl = (path: string): string => `${fixturesUrl()}/reset${path}`;
const hangUrl = (path: string): string => `${fixturesUrl()}/hang${path}`;

describe("connection failures say one clear thing", () => {
  it("MCP servers: refused and reset read 'could not be reached', a silent server 'did not answer within'", async () => {
    const setup = await laneSetup("connmcp");
    for (const [name, url] of [["refused", refusedUrl("/mcp")], ["reset", resetUrl("/mcp")]] as const) {
      const view = await registerMcpServer(setup, name, { url });
      expect(view).toMatchObject({ status: "error", lastError: { message: `The MCP server ${name} could not be reached` } });
    }
    // Listing tools has its own deadline (a call's timeoutMs may be shorter).
    const silent = await registerMcpServer(setup, "silent", { url: hangUrl("/mcp") });
    expect(silent).toMatchObject({ status: "error", lastError: { message: `The MCP server silent did not answer within ${MCP_DISCOVERY_TIMEOUT_MS} ms` } });
    const refreshed = await call(`${setup.sessionPath}/mcp-servers/refused/refresh`, { method: "POST", token: setup.key });
    expect(await refreshed.json()).toMatchObject({ lastError: { message: "The MCP server refused could not be reached" } });
  });

  it("http tools: refused and reset read 'could not be reached', a silent endpoint 'did not answer within'", async () => {
    const setup = await laneSetup("connhttp");
    const tools = { refused: { url: refusedUrl("/tool") }, reset: { url: resetUrl("/tool") }, silent: { url: hangUrl("/tool"), timeoutMs: 300 } };
    for (const [name, tool] of Object.entries(tools)) {
      expect((await putTool(setup, name, { kind: "http", description: "d", parameters: ARGS_SCHEMA, ...tool })).status).toBe(201);
    }
    await useScript(setup, [{ toolCalls: Object.keys(tools).map((name) => ({ name, arguments: { question: "q" } })) }, { text: "carried on" }]);
    await activate(setup, Object.keys(tools));
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    expect(await resultTexts(setup)).toEqual([
      { text: "The tool endpoint could not be reached", isError: true },
      { text: "The tool endpoint could not be reached", isError: true },
      { text: "The tool endpoint did not answer within 300 ms", isError: true },
    ]);
  });

  it("webhook deliveries: refused and reset are logged 'unreachable: the endpoint could not be reached'", async () => {
    const setup = await laneSetup("connhook");
    const endpoints = [await register(setup.key, refusedUrl("/hook")), await register(setup.key, resetUrl("/hook"))];
    await settledPrompt(setup.key, setup.lanePath, "tell them");
    for (const endpoint of endpoints) {
      const [attempted] = await eventually(async () => {
        const items = await deliveries(setup.key, endpoint.id);
        return items[0]?.attempts === 1 ? items : undefined;
      }, "the first attempt");
      expect(attempted).toMatchObject({ status: "pending", lastError: "unreachable: the endpoint could not be reached" });
    }
  });
});
