import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";
import { mcpScope } from "../api/mcp-helpers.ts";

// The SDK's tenant tools and MCP servers against the real app in workerd: put (the secret once),
// revise, list, read, an agent naming them, the in-use refusal, deletion.

const ARGS = { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] };

describe("client SDK: tenant tools and MCP servers", { timeout: 30_000 }, () => {
  it("puts, revises, lists, reads and deletes them; an agent naming one holds it in use", async () => {
    const tenant = await newTenant("sdk_ttools");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const created = await client.tenantTools.put("lookup", { kind: "http", description: "Looks up an order", parameters: ARGS, url: "https://tools.example.com/orders" });
    expect(created).toMatchObject({ name: "lookup", revision: 1, created: true, secret: expect.stringMatching(/^tsk_/) });
    const revised = await client.tenantTools.put("lookup", { kind: "http", description: "Looks up an order by id", parameters: ARGS, url: "https://tools.example.com/orders" });
    expect(revised).toMatchObject({ revision: 2, created: false, secretHint: created.secretHint });
    expect(revised).not.toHaveProperty("secret");
    expect(await client.tenantTools.get("lookup")).toMatchObject({ revision: 2 });
    const names = [];
    for await (const tool of client.tenantTools.all({ limit: 1 })) names.push(tool.name);
    expect(names).toEqual(["lookup"]);

    const scope = mcpScope("sdk_ttools");
    expect(await client.tenantMcpServers.put("docs", { url: scope.url, allow: ["echo"] })).toMatchObject({ created: true, revision: 1, tools: [{ name: "docs_echo" }] });
    expect(await client.tenantMcpServers.refresh("docs")).toMatchObject({ revision: 1, status: "ready" });
    expect((await client.tenantMcpServers.list()).items.map((server) => server.name)).toEqual(["docs"]);

    const agent = await client.agents.create({ id: "support", tools: { lookup: { kind: "tenant", tool: "lookup" } }, mcpServers: ["docs"], activeTools: ["lookup", "docs_echo"] });
    expect(agent).toMatchObject({ tools: { lookup: { kind: "tenant", tool: "lookup", revision: 2 } }, mcpServers: [{ name: "docs", revision: 1 }] });
    const inUse = await client.tenantTools.delete("lookup").catch((error: unknown) => error);
    expect(isApiError(inUse) && inUse.code).toBe("ToolInUse");
    await client.agents.delete("support");
    await client.tenantTools.delete("lookup");
    await client.tenantMcpServers.delete("docs");
    expect((await client.tenantTools.list()).items).toEqual([]);
    expect((await client.tenantMcpServers.list()).items).toEqual([]);
  });
});
