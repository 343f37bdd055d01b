import { describe, expect, it } from "vitest";
import type { McpServerView } from "../../schema/mcp.ts";
import type { TenantMcpServerView } from "../../schema/tenant-tools.ts";
import { call, newTenant } from "./helpers.ts";
import { mcpScope, putMcpServer, registerMcpServer } from "./mcp-helpers.ts";
import { laneSetup } from "./lane-helpers.ts";

// docs/tools.md "MCP servers": `allow` — "only these tools (their names on the server)". A PUT
// that replaces a registration keeps the cached tools should its discovery fail, but only those
// the new `allow` admits: a tenant that narrows a server to one tool while the server is
// unreachable offers (and its lanes can call) that tool alone.

const ALL_TOOLS = ["broken", "echo", "hang", "huge", "park_first", "picture"];

describe("replacing an MCP server registration while the server is down", () => {
  it("a session server re-registered with allow: [echo] offers no tool outside echo", async () => {
    const setup = await laneSetup("rvt_mcp_allow");
    const scope = mcpScope("rvt-allow");
    const first = await registerMcpServer(setup, "docs", { url: scope.url });
    expect(first.tools.map((tool) => tool.remoteName).sort()).toEqual(ALL_TOOLS);
    await scope.control({ down: true });

    const replaced = await putMcpServer(setup, "docs", { url: scope.url, allow: ["echo"] });
    expect(replaced.status).toBe(200);
    const view = await replaced.json<McpServerView>();
    expect(view.status).toBe("error");
    expect(view.allow).toEqual(["echo"]);
    // What the session offers now (and what a lane may activate and call).
    const listed = await (await call(`${setup.sessionPath}/tools`, { token: setup.key })).json<{ items: { name: string; kind: string }[] }>();
    const offered = listed.items.filter((tool) => tool.kind === "mcp").map((tool) => tool.name);
    expect({ view: view.tools.map((tool) => tool.remoteName), offered }).toEqual({ view: expect.not.arrayContaining(["hang"]), offered: expect.not.arrayContaining(["docs_hang"]) });
    const activated = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["docs_hang"] }, token: setup.key });
    expect(activated.status).toBe(422);
  });

  it("a tenant server's next revision with allow: [echo] lists no tool outside echo", async () => {
    const tenant = await newTenant("rvt_tmcp_allow");
    const scope = mcpScope("rvt-tallow");
    const first = await call("/v1/mcp-servers/docs", { method: "PUT", body: { url: scope.url }, token: tenant.key });
    expect(first.status).toBe(201);
    await scope.control({ down: true });
    const replaced = await call("/v1/mcp-servers/docs", { method: "PUT", body: { url: scope.url, allow: ["echo"] }, token: tenant.key });
    expect(replaced.status).toBe(200);
    const view = await replaced.json<TenantMcpServerView>();
    expect(view).toMatchObject({ revision: 2, status: "error", allow: ["echo"] });
    expect(view.tools.map((tool) => tool.remoteName)).not.toContain("hang");
  });
});
