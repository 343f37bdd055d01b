import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { StoredMcpServer } from "../../tools/mcp-definitions.ts";
import { discoverMcpTools } from "../../tools/mcp-discovery.ts";

// docs/tools.md "MCP servers", Discovery: "A tool is skipped (listed in `skippedTools` with the
// reason) when … its input schema is not a usable JSON Schema object of at most 16 KiB". One tool the
// session cannot use (a bad input schema, no name) is skipped; the server's other tools are still offered.

const server: StoredMcpServer = { url: "https://mcp.example.com/mcp", prefix: "docs_", replay: "never", timeoutMs: 10_000, headerNames: [], revision: "r1", tools: [], skippedTools: [] };

const ECHO = { name: "echo", description: "Says the text back", inputSchema: { type: "object", properties: { text: { type: "string" } } } };

/** A fake MCP server (streamable HTTP, JSON answers) whose `tools/list` lists `tools`. */
function listing(tools: unknown): typeof fetch {
  return async (input, init) => {
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    if (method !== "POST") return new Response(null, { status: 405 });
    const raw = typeof init?.body === "string" ? init.body : await new Response(init?.body ?? null).text();
    const message = JSON.parse(raw) as { id?: unknown; method?: string };
    if (message.method === "initialize") {
      return Response.json({ jsonrpc: "2.0", id: message.id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "fake", version: "1.0.0" } } });
    }
    if (message.id === undefined) return new Response(null, { status: 202 });
    if (message.method === "tools/list") return Response.json({ jsonrpc: "2.0", id: message.id, result: { tools } });
    return Response.json({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "not here" } });
  };
}

async function discovered(tools: unknown): Promise<{ tools: string[]; skipped: string[] } | string> {
  try {
    const discovery = await discoverMcpTools({ sessionId: "s-1", serverName: "docs", server }, { secretsKey: env.SECRETS_KEY, allowLoopback: false, fetch: listing(tools) }, new AbortController().signal);
    return { tools: discovery.tools.map((tool) => tool.name), skipped: discovery.skippedTools.map((tool) => tool.name) };
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

describe("a server listing one tool the session cannot use", () => {
  it("a tool whose input schema is not an object schema is skipped; the others are kept", async () => {
    expect(await discovered([ECHO, { name: "scalar", inputSchema: { type: "string" } }])).toEqual({ tools: ["echo"], skipped: ["scalar"] });
  });

  it("a tool without an input schema is skipped; the others are kept", async () => {
    expect(await discovered([ECHO, { name: "bare" }])).toEqual({ tools: ["echo"], skipped: ["bare"] });
  });

  it("a tool without a name is skipped; the others are kept", async () => {
    expect(await discovered([{ description: "nameless", inputSchema: { type: "object" } }, ECHO])).toEqual({ tools: ["echo"], skipped: ["?"] });
  });
});

describe("a server whose tools/list answer holds no list of tools", () => {
  it("the discovery fails with a sentence, not the parser's text", async () => {
    expect(await discovered("none")).toBe("The MCP server docs answered tools/list without a list of tools");
  });
});
