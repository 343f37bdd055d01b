import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import type { ExecutableTool, ToolOutput } from "../harness/execution/tools.ts";
import { McpExchangeError, withMcpClient, type McpSettings } from "./mcp-connection.ts";
import { replayOf, type McpToolBinding } from "./mcp-definitions.ts";
import { TOOL_CALL_CONTEXT_META_KEY } from "../schema/tools.ts";
import type { CallContextOf } from "./call-context.ts";
import { toolOutputOf } from "./mcp-results.ts";

// The mcp kind (ARCHITECTURE D11): a tool of a tenant's MCP server, declared from the session's
// cached tool list and run as one `tools/call` inside the gated effect of the `tools` leaf. Its
// `replay` comes from the server's registration, so a crash in effect_pending replays or
// interrupts it like any other tool. Whatever goes wrong on the way (the server is down, answers
// an error or garbage, takes too long, answers too much) is thrown as a message, which the engine
// places as an error result: the run goes on.

export function mcpTool(sessionId: string, name: string, binding: McpToolBinding, settings: McpSettings, context: CallContextOf): ExecutableTool {
  const { server, serverName, tool } = binding;
  return {
    kind: "executable",
    declaration: { name, kind: "mcp", description: tool.description, parameters: tool.parameters, replay: replayOf(server, tool.name) },
    execute: async (args, { signal, toolCallId, invocation }): Promise<ToolOutput> => {
      if (tool.withdrawn) throw new McpExchangeError(`The MCP server ${serverName} no longer offers the tool ${tool.name}`);
      const answer = await withMcpClient({ sessionId, serverName, server }, settings, { signal, timeoutMs: server.timeoutMs }, (client, options) =>
        // For attribution only: the server authenticates the service by the headers registered with it.
        client.callTool({ name: tool.name, arguments: args, _meta: { [TOOL_CALL_CONTEXT_META_KEY]: context(invocation, toolCallId) } }, CallToolResultSchema, options),
      );
      // The SDK's return type also admits the pre-2025 `{ toolResult }` form, which the schema it parsed with excludes.
      const parsed = CallToolResultSchema.safeParse(answer);
      if (!parsed.success) throw new McpExchangeError(`The MCP server ${serverName} answered with something that is not a tool result`);
      return toolOutputOf(parsed.data);
    },
  };
}
