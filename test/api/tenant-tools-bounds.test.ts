import { describe, expect, it } from "vitest";
import { MAX_TENANT_MCP_SERVERS, MAX_TENANT_TOOL_REVISIONS, MAX_TENANT_TOOLS } from "../../schema/tenant-tools.ts";
import { call, newTenant, json } from "./helpers.ts";
import { mcpScope } from "./mcp-helpers.ts";
import { CLIENT_TOOL, putTool } from "./tenant-tool-helpers.ts";

// The bounds of tenant tools and MCP servers: live names per tenant (a deletion makes room) and
// revisions per name, each refused with 422 LimitExceeded and nothing written.

async function refusal(response: Response): Promise<unknown> {
  return { status: response.status, body: await response.json() };
}

describe("tenant tool bounds", () => {
  it(`a tenant holds at most ${MAX_TENANT_TOOLS} live tools; a deletion makes room; a revision of one it holds is no new tool`, { timeout: 120_000 }, async () => {
    const { key } = await newTenant("ttcount");
    for (let i = 0; i < MAX_TENANT_TOOLS; i++) expect((await putTool(key, `t${i}`, CLIENT_TOOL)).status).toBe(201);
    expect(await refusal(await putTool(key, "one_more", CLIENT_TOOL))).toMatchObject({ status: 422, body: { error: { code: "LimitExceeded", details: { resource: "tenant_tools", limit: MAX_TENANT_TOOLS } } } });
    expect((await call("/v1/tools/one_more", { token: key })).status).toBe(404);
    expect((await putTool(key, "t0", { ...CLIENT_TOOL, description: "again" })).status).toBe(200);
    expect((await call("/v1/tools/t1", { method: "DELETE", token: key })).status).toBe(204);
    expect((await putTool(key, "one_more", CLIENT_TOOL)).status).toBe(201);
  });

  it(`a tool has at most ${MAX_TENANT_TOOL_REVISIONS} revisions, counted across a delete`, { timeout: 300_000 }, async () => {
    const { key } = await newTenant("ttrevs");
    expect((await putTool(key, "busy", CLIENT_TOOL)).status).toBe(201);
    expect((await call("/v1/tools/busy", { method: "DELETE", token: key })).status).toBe(204);
    expect((await putTool(key, "busy", CLIENT_TOOL)).status).toBe(201);
    for (let revision = 3; revision <= MAX_TENANT_TOOL_REVISIONS; revision++) expect((await putTool(key, "busy", CLIENT_TOOL)).status).toBe(200);
    expect(await refusal(await putTool(key, "busy", { ...CLIENT_TOOL, description: "too many" }))).toMatchObject({
      status: 422,
      body: { error: { code: "LimitExceeded", details: { resource: "tenant_tools_revisions", limit: MAX_TENANT_TOOL_REVISIONS, name: "busy" } } },
    });
    expect(await json(await call("/v1/tools/busy", { token: key }), 200)).toMatchObject({ revision: MAX_TENANT_TOOL_REVISIONS, description: CLIENT_TOOL.description });
  });

  it(`a tenant holds at most ${MAX_TENANT_MCP_SERVERS} live MCP servers, refused before the server is contacted`, { timeout: 120_000 }, async () => {
    const { key } = await newTenant("tmcpcount");
    // A server that answers 503: registered (status "error") at once.
    const scope = mcpScope("tmcpcount");
    await scope.control({ down: true });
    const { url } = scope;
    for (let i = 0; i < MAX_TENANT_MCP_SERVERS; i++) expect((await call(`/v1/mcp-servers/s${i}`, { method: "PUT", body: { url }, token: key })).status).toBe(201);
    const contacted = (await scope.requests()).length;
    expect(await refusal(await call("/v1/mcp-servers/one_more", { method: "PUT", body: { url }, token: key }))).toMatchObject({
      status: 422,
      body: { error: { code: "LimitExceeded", details: { resource: "tenant_mcp_servers", limit: MAX_TENANT_MCP_SERVERS } } },
    });
    expect((await scope.requests()).length).toBe(contacted);
    expect((await call("/v1/mcp-servers/one_more", { token: key })).status).toBe(404);
    expect((await call("/v1/mcp-servers/s0", { method: "DELETE", token: key })).status).toBe(204);
    expect((await call("/v1/mcp-servers/one_more", { method: "PUT", body: { url }, token: key })).status).toBe(201);
  });
});
