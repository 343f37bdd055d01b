import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { STORAGE_BUDGET_BYTES } from "../../durable-objects/sql/storage-budget.ts";
import type { TenantMcpServerView } from "../../schema/tenant-tools.ts";
import { call, json, newTenant } from "./helpers.ts";
import { mcpScope } from "./mcp-helpers.ts";

// docs/tools.md "Tenant tools": a tenant MCP server's `refresh` that finds another list of tools
// "makes the next revision". The tenant object refuses to grow past its storage budget: "creations
// and new versions are 422 LimitExceeded (`details.resource: "tenantStorage"`) and write nothing"
// (test/api/tenant-storage-budget.test.ts; a PUT of a tenant MCP server is refused so). A refresh
// that would make a new revision is such a new version.

async function fillTenant(tenantId: string, full: boolean): Promise<void> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: object, state) => {
    if (full) Reflect.defineProperty(state.storage.sql, "databaseSize", { configurable: true, get: () => STORAGE_BUDGET_BYTES + 1 });
    else Reflect.deleteProperty(state.storage.sql, "databaseSize");
  });
}

describe("refreshing a tenant MCP server at the tenant's storage budget", () => {
  it("a refresh that finds another tool list writes no new revision (422 LimitExceeded tenantStorage)", async () => {
    const { tenantId, key } = await newTenant("tmcprefreshbudget");
    const scope = mcpScope("tmcp-refresh-budget");
    const first = await json<TenantMcpServerView>(await call("/v1/mcp-servers/docs", { method: "PUT", body: { url: scope.url, allow: ["echo", "broken"] }, token: key }), 201);
    expect(first.revision).toBe(1);
    await scope.control({ hidden: ["broken"] });
    await fillTenant(tenantId, true);
    let status: number;
    let body: unknown;
    try {
      const refreshed = await call("/v1/mcp-servers/docs/refresh", { method: "POST", token: key });
      status = refreshed.status;
      body = await refreshed.json();
    } finally {
      await fillTenant(tenantId, false);
    }
    const latest = await json<TenantMcpServerView>(await call("/v1/mcp-servers/docs", { token: key }), 200);
    expect({ status, body, latestRevision: latest.revision }).toEqual({
      status: 422,
      body: { error: expect.objectContaining({ code: "LimitExceeded", details: expect.objectContaining({ resource: "tenantStorage" }) }) },
      latestRevision: 1,
    });
  });

  it("a refresh that finds the same tool list only restates the latest revision, so it is answered", async () => {
    const { tenantId, key } = await newTenant("tmcprefreshsame");
    const scope = mcpScope("tmcp-refresh-same");
    const first = await json<TenantMcpServerView>(await call("/v1/mcp-servers/docs", { method: "PUT", body: { url: scope.url, allow: ["echo"] }, token: key }), 201);
    await fillTenant(tenantId, true);
    let refreshed: TenantMcpServerView;
    try {
      refreshed = await json<TenantMcpServerView>(await call("/v1/mcp-servers/docs/refresh", { method: "POST", token: key }), 200);
    } finally {
      await fillTenant(tenantId, false);
    }
    expect({ revision: refreshed.revision, status: refreshed.status, tools: refreshed.tools }).toEqual({ revision: first.revision, status: "ready", tools: first.tools });
  });
});
