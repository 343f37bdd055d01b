import { PaginatedResultSchema } from "@modelcontextprotocol/sdk/types.js";
import * as v from "valibot";
import { schemaProblem } from "../harness/execution/tool-arguments.ts";
import { JsonObjectSchema } from "../schema/json.ts";
import { MAX_MCP_SERVER_TOOLS } from "../schema/mcp.ts";
import { MAX_TOOL_DESCRIPTION_CHARS, ToolParametersSchema, ToolNameSchema } from "../schema/tools.ts";
import { McpExchangeError, withMcpClient, type McpSettings, type McpTarget } from "./mcp-connection.ts";
import type { CachedMcpTool, StoredMcpServer } from "./mcp-definitions.ts";

// Discovery (`tools/list`, every page) and what the session keeps of it: each allowed tool whose
// name (with the prefix) a model provider accepts and whose input schema is a usable, bounded JSON
// Schema. The others are reported as skipped with the reason, so a tenant sees why a tool is missing.

/** Pages of `tools/list` followed at most: a server that keeps paging is not listing tools. */
const MAX_LIST_PAGES = 16;
/** A discovery's own deadline: a server's call timeout may be short, and listing is not calling. */
export const MCP_DISCOVERY_TIMEOUT_MS = 10_000;
/** Skipped tools reported at most (the rest are counted in the last entry). */
const MAX_SKIPPED_REPORTED = 32;

export interface Discovery {
  tools: CachedMcpTool[];
  skippedTools: { name: string; reason: string }[];
}

// A page is read leniently, each tool on its own: the SDK's own schema (`listTools`) refuses the
// whole list for one badly formed tool, where one tool the session cannot use is only skipped.
const ToolsPageSchema = v.object({ tools: v.array(v.unknown()) });
/** A listed tool's fields the session reads; a title or description of another type is ignored, the input schema judged in `problemOf`. */
const ListedToolSchema = v.object({
  name: v.string(),
  title: v.fallback(v.optional(v.string()), undefined),
  description: v.fallback(v.optional(v.string()), undefined),
  inputSchema: v.optional(v.unknown()),
});
type ListedTool = v.InferOutput<typeof ListedToolSchema>;

/** The server's tools as the session may use them; throws McpExchangeError (or an abort of `signal`). */
export async function discoverMcpTools(target: McpTarget, settings: McpSettings, signal: AbortSignal): Promise<Discovery> {
  const listed = await withMcpClient(target, settings, { signal, timeoutMs: MCP_DISCOVERY_TIMEOUT_MS }, async (client, options) => {
    const all: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const answer = await client.request({ method: "tools/list", params: cursor === undefined ? {} : { cursor } }, PaginatedResultSchema, options);
      const listed = v.safeParse(ToolsPageSchema, answer);
      if (!listed.success) throw new McpExchangeError(`The MCP server ${target.serverName} answered tools/list without a list of tools`);
      all.push(...listed.output.tools);
      cursor = answer.nextCursor;
      if (cursor === undefined) return all;
    }
    throw new McpExchangeError(`The MCP server ${target.serverName} kept paging its tool list past ${MAX_LIST_PAGES} pages`);
  });
  return selectTools(target.server, listed);
}

function selectTools(server: Pick<StoredMcpServer, "prefix" | "allow">, listed: unknown[]): Discovery {
  const allowed = server.allow === undefined ? undefined : new Set(server.allow);
  const tools: CachedMcpTool[] = [];
  const skippedTools: { name: string; reason: string }[] = [];
  const seen = new Set<string>();
  for (const entry of listed) {
    const read = v.safeParse(ListedToolSchema, entry);
    // Without a name it cannot be allowed, called or even told apart: reported only when all are wanted.
    if (!read.success) {
      if (!allowed) skippedTools.push({ name: "?", reason: "the server lists a tool without a name" });
      continue;
    }
    const tool = read.output;
    if (allowed && !allowed.has(tool.name)) continue;
    const reason = problemOf(server.prefix, tool, seen);
    seen.add(tool.name);
    if (reason) skippedTools.push({ name: tool.name.slice(0, 128), reason });
    else if (tools.length >= MAX_MCP_SERVER_TOOLS) skippedTools.push({ name: tool.name, reason: `a server may offer at most ${MAX_MCP_SERVER_TOOLS} tools; name the ones you want in allow` });
    else tools.push({ name: tool.name, description: describe(tool), parameters: v.parse(JsonObjectSchema, tool.inputSchema) });
  }
  if (skippedTools.length > MAX_SKIPPED_REPORTED) {
    const rest = skippedTools.length - (MAX_SKIPPED_REPORTED - 1);
    skippedTools.splice(MAX_SKIPPED_REPORTED - 1, rest, { name: "…", reason: `${rest} more tools skipped` });
  }
  return { tools, skippedTools };
}

function problemOf(prefix: string, tool: ListedTool, seen: Set<string>): string | undefined {
  if (seen.has(tool.name)) return "the server lists this name twice";
  if (!v.is(ToolNameSchema, prefix + tool.name)) return `its name in this session (${(prefix + tool.name).slice(0, 80)}) is not 1–64 letters, digits, _ or -`;
  if (!v.is(JsonObjectSchema, tool.inputSchema) || !v.is(ToolParametersSchema, tool.inputSchema)) return "its input schema is not a JSON Schema object of at most 16 KiB";
  return schemaProblem(tool.inputSchema);
}

function describe(tool: ListedTool): string {
  const text = tool.description ?? tool.title ?? `The MCP tool ${tool.name}`;
  return text.length === 0 ? `The MCP tool ${tool.name}` : text.slice(0, MAX_TOOL_DESCRIPTION_CHARS);
}
