import { abortAllDurableObjects } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../schema/json.ts";
import { MAX_MCP_RESPONSE_BYTES } from "../../tools/mcp-connection.ts";
import { call } from "./helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { mcpScope, placedResults, registerMcpServer, untilCalled } from "./mcp-helpers.ts";
import { PIXEL_PNG_BASE64 } from "../node/mcp-test-server.ts";
import { activate, prompt, settle } from "./tool-api-helpers.ts";

// Runs that call MCP tools of a real MCP server (the official SDK's, test/node/mcp-test-server.ts)
// over real HTTP: each call is one `tools/call` in the gated effect of the tools leaf. Whatever
// the server does wrong is an error result the model sees; the run goes on.

async function mcpLane(prefix: string, calls: { name: string; arguments?: JsonObject }[], registration: Record<string, unknown> = {}) {
  const setup = await laneSetup(prefix);
  const scope = mcpScope(prefix);
  await registerMcpServer(setup, "srv", { url: scope.url, prefix: "", ...registration });
  await useScript(setup, [{ toolCalls: calls.map((toolCall) => ({ name: toolCall.name, arguments: toolCall.arguments ?? {} })) }, { text: "carried on" }]);
  await activate(setup, [...new Set(calls.map((toolCall) => toolCall.name))]);
  return { setup, scope };
}

describe("a run calling MCP tools", () => {
  it("text and image results become the tool results, an isError result an error result; the run completes", async () => {
    const { setup, scope } = await mcpLane("mcp_run", [{ name: "echo", arguments: { text: "hello ✓" } }, { name: "picture" }, { name: "broken" }]);
    const record = await settle(setup, await prompt(setup));
    expect(record.status).toBe("completed");
    expect(await placedResults(setup)).toEqual([
      { toolName: "echo", content: [{ type: "text", text: "echo: hello ✓" }], isError: false },
      { toolName: "picture", content: [{ type: "text", text: "a pixel:" }, { type: "image", data: PIXEL_PNG_BASE64, mimeType: "image/png" }], isError: false },
      { toolName: "broken", content: [{ type: "text", text: "the widget is broken" }], isError: true },
    ]);
    expect((await scope.calls()).map((request) => [request.tool, request.arguments])).toEqual(
      expect.arrayContaining([
        ["echo", { text: "hello ✓" }],
        ["picture", {}],
        ["broken", {}],
      ]),
    );
  });

  it("a call the server does not answer within timeoutMs is an error result, and the server sees the request go away", async () => {
    const { setup, scope } = await mcpLane("mcp_timeout", [{ name: "hang" }], { timeoutMs: 500 });
    const record = await settle(setup, await prompt(setup));
    expect(record.status).toBe("completed");
    expect(await placedResults(setup)).toEqual([{ toolName: "hang", content: [{ type: "text", text: "The MCP server srv did not answer within 500 ms" }], isError: true }]);
    for (let i = 0; i < 1000 && !(await scope.calls()).every((request) => request.abandoned); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await scope.calls()).map((request) => request.abandoned)).toEqual([true]);
  });

  it("an answer larger than the bound is an error result", async () => {
    const { setup } = await mcpLane("mcp_huge", [{ name: "huge" }]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    expect(await placedResults(setup)).toEqual([{ toolName: "huge", content: [{ type: "text", text: `The MCP server srv answered more than ${MAX_MCP_RESPONSE_BYTES} bytes` }], isError: true }]);
  });

  it("aborting the operation mid-call stops the call (the server sees the request go away) and ends the run as aborted", async () => {
    const { setup, scope } = await mcpLane("mcp_abort", [{ name: "hang" }]);
    const operationId = await prompt(setup);
    await untilCalled(scope, "hang");
    const aborted = await call(`${setup.lanePath}/operations/${operationId}/abort`, { method: "POST", token: setup.key });
    expect(aborted.status).toBeLessThan(300);
    expect((await settle(setup, operationId)).status).toBe("aborted");
    for (let i = 0; i < 1000 && !(await scope.calls()).every((request) => request.abandoned); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await scope.calls()).map((request) => request.abandoned)).toEqual([true]);
  });

  it("a server that is down at run time: its cached tools are still listed and offered, the call is an error result, the run completes", async () => {
    const { setup, scope } = await mcpLane("mcp_down", [{ name: "echo", arguments: { text: "anyone?" } }]);
    await scope.control({ down: true });
    const record = await settle(setup, await prompt(setup));
    expect(record.status).toBe("completed");
    expect(await placedResults(setup)).toEqual([{ toolName: "echo", content: [{ type: "text", text: "The MCP server srv answered HTTP 503" }], isError: true }]);
    const listed = await (await call(`${setup.sessionPath}/tools`, { token: setup.key })).json<{ items: { name: string; kind: string }[] }>();
    expect(listed.items).toContainEqual(expect.objectContaining({ name: "echo", kind: "mcp" }));
  });

  it("a tool the server withdrew while a lane had it active: the run still starts and the call is an error result", async () => {
    const { setup, scope } = await mcpLane("mcp_withdrawn_run", [{ name: "echo", arguments: { text: "still there?" } }]);
    await scope.control({ hidden: ["echo"] });
    expect((await call(`${setup.sessionPath}/mcp-servers/srv/refresh`, { method: "POST", token: setup.key })).status).toBe(200);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    expect(await placedResults(setup)).toEqual([{ toolName: "echo", content: [{ type: "text", text: "The MCP server srv no longer offers the tool echo" }], isError: true }]);
    expect(await scope.calls()).toEqual([]);
  });
});

describe("MCP tools across a crash", () => {
  async function parkedCall(prefix: string, replay: "safe" | "never") {
    const { setup, scope } = await mcpLane(prefix, [{ name: "park_first" }], { replay: { park_first: replay } });
    const operationId = await prompt(setup);
    await untilCalled(scope, "park_first");
    // The server holds the first call: the call is effect_pending when the object dies.
    await abortAllDurableObjects();
    return { setup, scope, operationId };
  }

  it('replay "safe": the fresh object calls the tool again; the second answer is placed once', async () => {
    const { setup, scope, operationId } = await parkedCall("mcp_safe", "safe");
    expect((await settle(setup, operationId)).status).toBe("completed");
    expect((await scope.calls()).map((request) => request.tool)).toEqual(["park_first", "park_first"]);
    expect(await placedResults(setup)).toEqual([{ toolName: "park_first", content: [{ type: "text", text: "answered call 2" }], isError: false }]);
  });

  it('replay "never" (the default): the tool is not called again; the result says the outcome is unknown', async () => {
    const { setup, scope, operationId } = await parkedCall("mcp_never", "never");
    expect((await settle(setup, operationId)).status).toBe("completed");
    expect((await scope.calls()).map((request) => request.tool)).toEqual(["park_first"]);
    const results = await placedResults(setup);
    expect(results).toHaveLength(1);
    expect(results[0]?.isError).toBe(true);
    expect(JSON.stringify(results[0]?.content)).toMatch(/interrupted/i);
  });
});
