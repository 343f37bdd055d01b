import { describe, expect, it } from "vitest";
import type { TenantMcpServerView } from "../../schema/tenant-tools.ts";
import { call, errorCode, newTenant, json } from "./helpers.ts";
import { mcpScope } from "./mcp-helpers.ts";
import { copiedHeaders, copiesFor, createAgent, patchAgent } from "./tenant-tool-helpers.ts";

// Tenant MCP servers (docs/tools.md "Tenant tools") through the real Hono app, against the local MCP
// test server: registration with discovery, revisions, refresh, agents that name them (their
// tools may be activated), deletion refused while an agent's latest version names one, the
// copies a session gets (headers sealed for it), isolation between tenants.

const put = (key: string, name: string, body: unknown): Promise<Response> => call(`/v1/mcp-servers/${name}`, { method: "PUT", body, token: key });

describe("tenant MCP servers", () => {
  it("registers, discovers, revises, refreshes, lists and deletes a server; header values never appear", async () => {
    const { key } = await newTenant("tmcp");
    const scope = mcpScope("tmcp");
    const first = await json<TenantMcpServerView>(await put(key, "docs", { url: scope.url, bearerToken: "tenant-token-1", allow: ["echo"] }), 201);
    expect(first).toMatchObject({ name: "docs", prefix: "docs_", status: "ready", headerNames: ["Authorization"], tools: [{ name: "docs_echo", remoteName: "echo" }], revision: 1 });
    expect((await scope.requests()).every((request) => request.authorization === "Bearer tenant-token-1")).toBe(true);
    expect(JSON.stringify(await json(await call("/v1/mcp-servers", { token: key }), 200))).not.toContain("tenant-token-1");

    const second = await json<TenantMcpServerView>(await put(key, "docs", { url: scope.url, bearerToken: "tenant-token-2", prefix: "d_", allow: ["echo"] }), 200);
    expect(second).toMatchObject({ revision: 2, tools: [{ name: "d_echo" }], createdAt: first.createdAt });
    // The same tool list: only the status of the latest revision changes.
    expect(await json(await call("/v1/mcp-servers/docs/refresh", { method: "POST", token: key }), 200)).toMatchObject({ revision: 2, status: "ready" });
    // The server stops answering: the cached tools stay, the error is shown, no new revision.
    await scope.control({ down: true });
    expect(await json(await call("/v1/mcp-servers/docs/refresh", { method: "POST", token: key }), 200)).toMatchObject({ revision: 2, status: "error", tools: [{ name: "d_echo" }] });
    await scope.control({ down: false, hidden: ["echo"] });
    // Another tool list: a new revision, so the tools a version pinned never change.
    expect(await json(await call("/v1/mcp-servers/docs/refresh", { method: "POST", token: key }), 200)).toMatchObject({ revision: 3, status: "ready", tools: [] });
    expect(await json(await call("/v1/mcp-servers", { token: key }), 200)).toMatchObject({ items: [{ name: "docs", revision: 3 }], nextCursor: null });

    expect((await call("/v1/mcp-servers/docs", { method: "DELETE", token: key })).status).toBe(204);
    expect(await errorCode(await call("/v1/mcp-servers/docs", { token: key }))).toBe("McpServerNotFound");
    expect(await errorCode(await call("/v1/mcp-servers/docs/refresh", { method: "POST", token: key }))).toBe("McpServerNotFound");
  });

  it("an agent names a server and activates its tools; its copy holds the pinned tools and the headers sealed for the session", async () => {
    const { key, tenantId } = await newTenant("tmcpag");
    const scope = mcpScope("tmcpag");
    await json(await put(key, "docs", { url: scope.url, headers: { "x-team": "blue" }, allow: ["echo"] }), 201);
    const unknown = await call("/v1/agents", { body: { id: "a", mcpServers: ["docs"], activeTools: ["docs_picture"] }, token: key });
    expect(unknown.status).toBe(422);
    expect(await unknown.json()).toMatchObject({ error: { code: "UnknownTool", details: { tools: ["docs_picture"] } } });
    const agent = await createAgent(key, { id: "a", mcpServers: ["docs"], activeTools: ["docs_echo"] });
    expect(agent.mcpServers).toEqual([{ name: "docs", revision: 1 }]);

    const { copies } = await copiesFor(tenantId, "a", undefined, "s_mcp");
    expect(copies.mcpServers.docs).toMatchObject({ url: scope.url, prefix: "docs_", tools: [{ name: "echo" }], headerNames: ["x-team"], tenantServer: { name: "docs", revision: 1 } });
    expect(await copiedHeaders(copies, "s_mcp", "docs")).toEqual({ "x-team": "blue" });

    const refused = await call("/v1/mcp-servers/docs", { method: "DELETE", token: key });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: { code: "ToolInUse", details: { agents: ["a"] } } });
    await patchAgent(key, "a", { mcpServers: null, activeTools: null });
    expect((await call("/v1/mcp-servers/docs", { method: "DELETE", token: key })).status).toBe(204);
    // Version 1 pinned revision 1: still copied after the delete.
    expect((await copiesFor(tenantId, "a", 1, "s_later")).copies.mcpServers.docs).toMatchObject({ tenantServer: { name: "docs", revision: 1 } });
  });

  it("refuses a URL the egress policy refuses before contacting it, with nothing written", async () => {
    const { key } = await newTenant("tmcpbad");
    const response = await put(key, "docs", { url: "https://169.254.169.254/mcp" });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: "ValidationFailed", details: { field: "url", reason: "unsafe_address" } } });
    expect(await json(await call("/v1/mcp-servers", { token: key }), 200)).toEqual({ items: [], nextCursor: null });
  });

  it("another tenant sees none of them", async () => {
    const owner = await newTenant("tmcpown");
    const other = await newTenant("tmcpother");
    await json(await put(owner.key, "docs", { url: mcpScope("tmcpown").url }), 201);
    expect(await json(await call("/v1/mcp-servers", { token: other.key }), 200)).toEqual({ items: [], nextCursor: null });
    expect(await errorCode(await call("/v1/mcp-servers/docs", { token: other.key }))).toBe("McpServerNotFound");
    expect(await errorCode(await call("/v1/mcp-servers/docs", { method: "DELETE", token: other.key }))).toBe("McpServerNotFound");
    expect(await errorCode(await call("/v1/mcp-servers/docs/refresh", { method: "POST", token: other.key }))).toBe("McpServerNotFound");
    expect(await errorCode(await call("/v1/agents", { body: { mcpServers: ["docs"] }, token: other.key }))).toBe("UnknownTool");
  });
});
