import { describe, expect, it } from "vitest";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import { call, json, newTenant } from "./helpers.ts";
import { mcpScope } from "./mcp-helpers.ts";

// docs/agents.md: "where [a] version leaves ... the active tools out, the lane takes what a session
// created from it starts with: ... every tool it brings". docs/tools.md: a tool the session defines
// keeps its name over an MCP tool, and between servers the one whose name sorts first keeps it — so
// one name is one tool. A lane's active tools name each tool once (lane config and an agent's
// `activeTools` refuse or fold repeats): the model is told about each tool once, as providers
// refuse a request that declares one tool name twice.

const SCRIPT = { provider: "scripted", modelId: "script" };
const CLIENT_TOOL = { kind: "client", description: "Says it back, client side", parameters: { type: "object" } };

async function mainLaneTools(key: string, sid: string): Promise<string[]> {
  return (await json<LaneExecutionInfo>(await call(`/v1/sessions/${sid}/lanes/main`, { token: key }), 200)).configuration.activeToolNames;
}

describe("an agent without activeTools whose tools share a name", () => {
  it("two tenant MCP servers offering the same name: a session made from the agent activates that name once", async () => {
    const { key } = await newTenant("agmcpdup");
    const scope = mcpScope("ag-mcp-dup");
    await json(await call("/v1/mcp-servers/a", { method: "PUT", token: key, body: { url: scope.url, prefix: "", allow: ["echo"] } }), 201);
    await json(await call("/v1/mcp-servers/b", { method: "PUT", token: key, body: { url: scope.url, prefix: "", allow: ["echo"] } }), 201);
    await json(await call("/v1/agents", { token: key, body: { id: "reader", model: SCRIPT, mcpServers: ["a", "b"] } }), 201);
    const session = await json<{ id: string }>(await call("/v1/sessions", { token: key, body: { agent: "reader" } }), 201);
    expect(await mainLaneTools(key, session.id)).toEqual(["echo"]);
  });

  it("an agent's own tool and a tool of its MCP server under the same name: the name is active once", async () => {
    const { key } = await newTenant("agmcpdup2");
    const scope = mcpScope("ag-mcp-dup2");
    await json(await call("/v1/mcp-servers/docs", { method: "PUT", token: key, body: { url: scope.url, prefix: "", allow: ["echo"] } }), 201);
    await json(await call("/v1/agents", { token: key, body: { id: "reader", model: SCRIPT, tools: { echo: CLIENT_TOOL }, mcpServers: ["docs"] } }), 201);
    const session = await json<{ id: string }>(await call("/v1/sessions", { token: key, body: { agent: "reader" } }), 201);
    expect(await mainLaneTools(key, session.id)).toEqual(["echo"]);
  });
});
