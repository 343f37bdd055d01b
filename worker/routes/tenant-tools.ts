import { Hono } from "hono";
import { PAGE_LIMIT_DEFAULT, PageQuerySchema } from "../../schema/api.ts";
import { McpServerInputSchema, McpServerNameSchema } from "../../schema/mcp.ts";
import { TenantToolInputSchema } from "../../schema/tenant-tools.ts";
import { ToolNameSchema } from "../../schema/tools.ts";
import { toWire } from "../../schema/wire.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, pathParam, queryParams } from "../validate.ts";

/**
 * The tenant's own tools and MCP servers (docs/tools.md "Tenant tools"), kept by the TenantObject
 * (tenant/tenant-tools.ts, tenant/tenant-mcp-servers.ts) as revisions an agent version pins.
 * Names and bodies are validated here; the object checks and seals the rest, as a session does.
 * A PUT is idempotent by nature (the same body again makes an equal revision; an http tool keeps
 * its secret), so it takes no Idempotency-Key. Mounted at /v1, so authentication is per route.
 */
export const tenantToolRoutes = new Hono<AppEnv>()
  .get("/tools", requireTenant, async (c) => {
    const { limit, cursor } = queryParams(c, PageQuerySchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).listTenantTools(limit ?? PAGE_LIMIT_DEFAULT, cursor)));
  })
  .get("/tools/:name", requireTenant, async (c) => {
    const name = pathParam(c, "name", ToolNameSchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).getTenantTool(name)));
  })
  // 201 with an http tool's signing secret when this request created the tool (shown this once), else 200 (a new revision).
  .put("/tools/:name", requireTenant, async (c) => {
    const name = pathParam(c, "name", ToolNameSchema);
    const definition = await jsonBody(c, TenantToolInputSchema);
    const { created, ...reply } = replyValue(await tenantStub(c.env, c.get("caller").tenantId).putTenantTool(name, toWire(definition)));
    return c.json(reply, created ? 201 : 200);
  })
  // 404 ToolNotFound when absent; 409 ToolInUse while the latest version of a live agent names it.
  .delete("/tools/:name", requireTenant, async (c) => {
    const name = pathParam(c, "name", ToolNameSchema);
    replyValue(await tenantStub(c.env, c.get("caller").tenantId).deleteTenantTool(name));
    return c.body(null, 204);
  })
  .get("/mcp-servers", requireTenant, async (c) => {
    const { limit, cursor } = queryParams(c, PageQuerySchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).listTenantMcpServers(limit ?? PAGE_LIMIT_DEFAULT, cursor)));
  })
  .get("/mcp-servers/:name", requireTenant, async (c) => {
    const name = pathParam(c, "name", McpServerNameSchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).getTenantMcpServer(name)));
  })
  // 201 when this request registered the server, 200 for a new revision; a failed discovery is in the answer's `status`/`lastError`.
  .put("/mcp-servers/:name", requireTenant, async (c) => {
    const name = pathParam(c, "name", McpServerNameSchema);
    const input = await jsonBody(c, McpServerInputSchema);
    const { created, ...reply } = replyValue(await tenantStub(c.env, c.get("caller").tenantId).putTenantMcpServer(name, toWire(input)));
    return c.json(reply, created ? 201 : 200);
  })
  // 404 McpServerNotFound when absent; 409 ToolInUse while the latest version of a live agent names it.
  .delete("/mcp-servers/:name", requireTenant, async (c) => {
    const name = pathParam(c, "name", McpServerNameSchema);
    replyValue(await tenantStub(c.env, c.get("caller").tenantId).deleteTenantMcpServer(name));
    return c.body(null, 204);
  })
  // Discovers the tools again now; a failure keeps the cached tools and is in `lastError`.
  .post("/mcp-servers/:name/refresh", requireTenant, async (c) => {
    const name = pathParam(c, "name", McpServerNameSchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).refreshTenantMcpServer(name)));
  });
