import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";
import { mcpScope } from "../api/mcp-helpers.ts";

// The SDK's MCP servers against the real app in workerd and the local MCP server
// (test/node/mcp-test-server.ts): register, list (also through tools.listing), refresh, delete.

describe("client SDK: MCP servers", () => {
  it("registers a server, sees its tools in the session's tools, refreshes and removes it; the token never comes back", async () => {
    const tenant = await newTenant("sdk_mcp");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const session = await client.sessions.create();
    const scope = mcpScope("sdk");
    const registered = await client.mcpServers.put(session.id, "docs", { url: scope.url, bearerToken: "sdk-secret-token", allow: ["echo"] });
    expect(registered).toMatchObject({ created: true, status: "ready", toolCount: 1, tools: [{ name: "docs_echo", remoteName: "echo", replay: "never" }] });
    expect((await client.tools.list(session.id)).map((tool) => [tool.name, tool.kind, tool.server])).toEqual([["docs_echo", "mcp", "docs"]]);
    const listing = await client.tools.listing(session.id);
    expect(listing.mcpServers).toEqual([expect.objectContaining({ name: "docs", status: "ready", toolCount: 1 })]);
    expect(JSON.stringify(await client.mcpServers.list(session.id))).not.toContain("sdk-secret-token");

    await scope.control({ down: true });
    expect(await client.mcpServers.refresh(session.id, "docs")).toMatchObject({ status: "error", toolCount: 1 });
    await client.mcpServers.delete(session.id, "docs");
    expect(await client.mcpServers.list(session.id)).toEqual([]);
    expect(isApiError(await client.mcpServers.delete(session.id, "docs").catch((error: unknown) => error), "McpServerNotFound")).toBe(true);
  });
});
