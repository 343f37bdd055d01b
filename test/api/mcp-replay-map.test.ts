import { describe, expect, it } from "vitest";
import { mcpToolView, replayOf, type StoredMcpServer } from "../../tools/mcp-definitions.ts";

// docs/tools.md "MCP servers": `replay` is "never" (the default), "safe", or a map by tool name on
// the server, "the others "never"". tools/mcp-definitions.ts replayOf reads the map with a plain
// property lookup, so a tool the server names like a member of Object.prototype (`toString`,
// `constructor`, `valueOf`, `__proto__`, …) gets that member (a function, an object) as its replay
// policy: the listing (`GET …/tools`, the server view) then shows the tool without `replay`, and
// the call's durable `effect_pending{replay}` holds a function instead of "never".

const server: StoredMcpServer = {
  url: "https://mcp.example.com/mcp",
  prefix: "docs_",
  replay: { search: "safe" },
  timeoutMs: 30_000,
  headerNames: [],
  revision: "r1",
  tools: [
    { name: "search", description: "searches", parameters: { type: "object" } },
    { name: "toString", description: "a tool named toString", parameters: { type: "object" } },
  ],
  skippedTools: [],
};

describe("an MCP server's per-tool replay map", () => {
  it('a tool it does not name is "never", whatever its name', () => {
    expect(replayOf(server, "search")).toBe("safe");
    expect(replayOf(server, "toString")).toBe("never");
    expect(replayOf(server, "constructor")).toBe("never");
    expect(replayOf(server, "__proto__")).toBe("never");
    const tool = server.tools[1];
    if (!tool) throw new Error("fixture");
    const view = JSON.parse(JSON.stringify(mcpToolView("docs_toString", { serverName: "docs", server, tool })));
    expect(view.replay).toBe("never");
  });
});
