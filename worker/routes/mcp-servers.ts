import { Hono } from "hono";
import { McpServerInputSchema, McpServerNameSchema } from "../../schema/mcp.ts";
import { toWire } from "../../schema/wire.ts";
import type { AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, pathParam } from "../validate.ts";
import { sessionTarget } from "./session-target.ts";

/**
 * MCP servers of a session (spec/API.md "Sessions"), mounted at `/v1/sessions/:sid/mcp-servers`.
 * Names and bodies are validated here; the object checks the URL and the bound, discovers the
 * server's tools and stores the outcome. Header values and bearer tokens are never answered.
 */
export const mcpServerRoutes = new Hono<AppEnv>()
  .use(requireTenant)
  // Every server (bounded: MAX_SESSION_MCP_SERVERS) with its state and cached tools.
  .get("/", async (c) => {
    const { stub } = sessionTarget(c);
    return c.json({ items: replyValue(await stub.listMcpServers()) });
  })
  // 201 when this request registered the server, 200 when it replaced one; a failed discovery is in the answer's `status`/`lastError`.
  .put("/:name", async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", McpServerNameSchema);
    const input = await jsonBody(c, McpServerInputSchema);
    const { created, ...reply } = replyValue(await stub.putMcpServer(name, toWire(input)));
    return c.json(reply, created ? 201 : 200);
  })
  // 404 McpServerNotFound when absent; 409 ToolInUse while a lane has one of its tools active.
  .delete("/:name", async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", McpServerNameSchema);
    replyValue(await stub.deleteMcpServer(name));
    return c.body(null, 204);
  })
  // Discovers the tools again now (whatever the TTL); a failure keeps the cached tools and is in `lastError`.
  .post("/:name/refresh", async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", McpServerNameSchema);
    return c.json(replyValue(await stub.refreshMcpServer(name)));
  });
