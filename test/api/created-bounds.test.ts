import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { MAX_AGENTS_CREATED } from "../../schema/agents.ts";
import { MAX_TENANT_TOOL_NAMES } from "../../schema/tenant-tools.ts";
import { call, newTenant } from "./helpers.ts";
import { CLIENT_TOOL, putTool } from "./tenant-tool-helpers.ts";

// Deleted agents and tenant tools keep their versions and revisions (an older agent version, or a
// session's record, may still name them), so deletions do not make room for ever more of them:
// what a tenant creates in all is bounded too. The deleted rows are seeded straight into the
// tenant's tables (creating a thousand through the API would only make the test slow).

async function seedDeleted(tenantId: string, sql: string, count: number): Promise<void> {
  await runInDurableObject(env.TENANTS.getByName(tenantId), (_instance: TenantObject, state) => {
    for (let i = 0; i < count; i++) state.storage.sql.exec(sql, `gone_${i}`, i + 1);
  });
}

async function refusal(response: Response): Promise<unknown> {
  return { status: response.status, error: (await response.json<{ error: unknown }>()).error };
}

describe("what a tenant creates in all is bounded, deleted ones included", () => {
  it(`at most ${MAX_AGENTS_CREATED} agents`, async () => {
    const { tenantId, key } = await newTenant("created_agents");
    expect((await call("/v1/agents", { body: { id: "first" }, token: key })).status).toBe(201);
    await seedDeleted(tenantId, "INSERT INTO agents (agent_id, created_at, latest_version, deleted_at) VALUES (?, ?, 1, 1)", MAX_AGENTS_CREATED - 2);
    expect((await call("/v1/agents", { body: { id: "last" }, token: key })).status).toBe(201);
    expect(await refusal(await call("/v1/agents", { body: { id: "one_more" }, token: key }))).toMatchObject({
      status: 422,
      error: { code: "LimitExceeded", details: { resource: "agents_created", limit: MAX_AGENTS_CREATED } },
    });
    expect((await call("/v1/agents/one_more", { token: key })).status).toBe(404);
    // A new version of an agent it holds is still made.
    expect((await call("/v1/agents/last", { method: "PATCH", body: { name: "Last" }, token: key })).status).toBe(200);
  });

  it(`at most ${MAX_TENANT_TOOL_NAMES} tenant tool names; a deleted name can be created again`, async () => {
    const { tenantId, key } = await newTenant("created_tools");
    expect((await putTool(key, "first", CLIENT_TOOL)).status).toBe(201);
    expect((await call("/v1/tools/first", { method: "DELETE", token: key })).status).toBe(204);
    await seedDeleted(tenantId, "INSERT INTO tenant_tools (kind, name, created_at, latest_revision, deleted_at) VALUES ('tool', ?, ?, 1, 1)", MAX_TENANT_TOOL_NAMES - 1);
    expect(await refusal(await putTool(key, "brand_new", CLIENT_TOOL))).toMatchObject({
      status: 422,
      error: { code: "LimitExceeded", details: { resource: "tenant_tools_created", limit: MAX_TENANT_TOOL_NAMES } },
    });
    expect((await call("/v1/tools/brand_new", { token: key })).status).toBe(404);
    expect((await putTool(key, "first", CLIENT_TOOL)).status).toBe(201);
  });
});
