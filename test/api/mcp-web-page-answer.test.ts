import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { discoverMcpTools } from "../../tools/mcp-discovery.ts";
import type { StoredMcpServer } from "../../tools/mcp-definitions.ts";

// docs/tools.md "MCP servers": what can go wrong with a server "becomes an error result the model
// sees" (and, for a discovery, `lastError`), in words that say what happened. The MCP SDK reports
// an answer that is not MCP at all (a 200 with an HTML page: a URL that points at a website) with
// the code -1, which is no HTTP status: the tenant reads "answered in a way that is not MCP".

const server: StoredMcpServer = { url: "https://mcp.example.com/mcp", prefix: "docs_", replay: "never", timeoutMs: 10_000, headerNames: [], revision: "r1", tools: [], skippedTools: [] };

describe("an MCP server URL that answers a web page", () => {
  it("the discovery's error does not claim an HTTP status the server never sent", async () => {
    const page: typeof fetch = async () => new Response("<!doctype html><title>Welcome</title>", { status: 200, headers: { "content-type": "text/html; charset=utf-8" } });
    let message = "discovery succeeded";
    try {
      await discoverMcpTools({ sessionId: "rvt-s", serverName: "docs", server }, { secretsKey: env.SECRETS_KEY, allowLoopback: false, fetch: page }, new AbortController().signal);
    } catch (error) {
      message = error instanceof Error ? error.message : String(error);
    }
    expect(message).toMatch(/^The MCP server docs /);
    expect(message).not.toContain("HTTP -1");
  });
});
