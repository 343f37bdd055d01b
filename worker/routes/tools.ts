import { Hono } from "hono";
import { ToolDefinitionInputSchema, ToolNameSchema } from "../../schema/tools.ts";
import { toWire } from "../../schema/wire.ts";
import type { AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, pathParam } from "../validate.ts";
import { sessionTarget } from "./session-target.ts";

/**
 * Tool definitions of a session (spec/API.md "Sessions"), mounted at `/v1/sessions/:sid/tools`.
 * Names and bodies are validated here; the object checks the rest (builtin names, the parameters
 * schema, the URL, the bound) before writing anything.
 */
export const toolRoutes = new Hono<AppEnv>()
  .use(requireTenant)
  // Every definition (bounded: a session defines at most MAX_SESSION_TOOLS, each MCP server
  // MAX_MCP_SERVER_TOOLS) and the state of each MCP server; secrets never appear.
  .get("/", async (c) => {
    const { stub } = sessionTarget(c);
    return c.json(replyValue(await stub.listTools()));
  })
  // 201 with an http tool's signing secret when this request created it (shown this once), else 200.
  .put("/:name", async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", ToolNameSchema);
    const definition = await jsonBody(c, ToolDefinitionInputSchema);
    const { created, ...reply } = replyValue(await stub.putTool(name, toWire(definition)));
    return c.json(reply, created ? 201 : 200);
  })
  // 404 ToolNotFound when absent; 409 ToolInUse while a lane has it active.
  .delete("/:name", async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", ToolNameSchema);
    replyValue(await stub.deleteTool(name));
    return c.body(null, 204);
  });
