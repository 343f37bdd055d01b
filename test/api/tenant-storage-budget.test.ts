import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { STORAGE_BUDGET_BYTES } from "../../durable-objects/sql/storage-budget.ts";
import { call, errorCode, newTenant } from "./helpers.ts";

// Everything a tenant owns beside its sessions' own data (its keys, quotas, session index, agents
// and their versions, tenant tools and MCP servers and their revisions, webhooks) lives in one
// tenant object, whose SQLite the platform stops writing at 10 GB, key checks and quota leases
// included. What the per-tenant count bounds admit together is far more than that (100 agents ×
// 1,000 versions of 256 KiB), so the object also refuses to grow past a storage budget: creations
// and new versions are 422 LimitExceeded (`details.resource: "tenantStorage"`) and write nothing,
// while reads, key checks, prompts and deletions go on. A full 8 GiB cannot be written in a test:
// the object's reported size is raised instead.

async function fillTenant(tenantId: string, full: boolean): Promise<void> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: object, state) => {
    if (full) Reflect.defineProperty(state.storage.sql, "databaseSize", { configurable: true, get: () => STORAGE_BUDGET_BYTES + 1 });
    else Reflect.deleteProperty(state.storage.sql, "databaseSize");
  });
}

async function refused(response: Response): Promise<void> {
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(422);
  expect(JSON.parse(text)).toMatchObject({ error: { code: "LimitExceeded", details: { resource: "tenantStorage" } } });
}

describe("a tenant object at its storage budget", () => {
  it("takes no new agent, version, tool, MCP server, webhook or session; what exists still works; room again, all work", async () => {
    const { tenantId, key } = await newTenant("tsbudget");
    expect((await call("/v1/agents", { body: { id: "a1" }, token: key })).status).toBe(201);
    expect((await call("/v1/sessions", { body: { id: "kept" }, token: key })).status).toBe(201);
    await fillTenant(tenantId, true);
    try {
      await refused(await call("/v1/agents", { body: { id: "a2" }, token: key }));
      await refused(await call("/v1/agents/a1", { method: "PATCH", body: { name: "renamed" }, token: key }));
      await refused(await call("/v1/tools/t1", { method: "PUT", body: { kind: "client", description: "A tool", parameters: { type: "object" } }, token: key }));
      await refused(await call("/v1/mcp-servers/m1", { method: "PUT", body: { url: "https://mcp.example.com/mcp" }, token: key }));
      await refused(await call("/v1/webhooks", { body: { url: "https://hooks.example.com/in", events: ["operation.settled"] }, token: key }));
      await refused(await call("/v1/sessions", { body: { id: "late" }, token: key }));
      // Nothing of the refused ones exists (the session made before the refusal was deleted again).
      expect((await call("/v1/agents/a2", { token: key })).status).toBe(404);
      expect((await call("/v1/sessions/late", { token: key })).status).toBe(404);
      expect((await (await call("/v1/agents/a1", { token: key })).json<{ version: number }>()).version).toBe(1);
      // What exists goes on: reads, the key, and the session listed before.
      expect((await call("/v1/me", { token: key })).status).toBe(200);
      expect((await call("/v1/sessions/kept", { token: key })).status).toBe(200);
      expect((await call("/v1/sessions/kept", { method: "DELETE", token: key })).status).toBe(204);
    } finally {
      await fillTenant(tenantId, false);
    }
    expect((await call("/v1/agents", { body: { id: "a2" }, token: key })).status).toBe(201);
    expect((await call("/v1/sessions", { body: { id: "late" }, token: key })).status).toBe(201);
    expect(await errorCode(await call("/v1/sessions", { body: { id: "late" }, token: key }))).toBe("SessionExists");
  });
});
