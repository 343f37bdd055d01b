import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { MAX_SESSION_MCP_SERVERS, MCP_DISCOVERY_TTL_MS, type McpServerSummary, type McpServerView } from "../../schema/mcp.ts";
import type { ToolDefinitionView } from "../../schema/tools.ts";
import { mcpServer } from "../../tools/mcp-definitions.ts";
import { call, errorCode } from "./helpers.ts";
import { mcpScope, putMcpServer, registerMcpServer } from "./mcp-helpers.ts";
import { laneSetup, useScript } from "./lane-helpers.ts";
import { activate, prompt, settle } from "./tool-api-helpers.ts";

// Registering, listing, refreshing and removing MCP servers against a real MCP server (the
// official SDK's, test/node/mcp-test-server.ts) over real HTTP.

const ALL_TOOLS = ["broken", "echo", "hang", "huge", "park_first", "picture"];

async function listTools(setup: { key: string; sessionPath: string }) {
  const response = await call(`${setup.sessionPath}/tools`, { token: setup.key });
  expect(response.status).toBe(200);
  return response.json<{ items: ToolDefinitionView[]; mcpServers: McpServerSummary[] }>();
}

async function listServers(setup: { key: string; sessionPath: string }): Promise<McpServerView[]> {
  const response = await call(`${setup.sessionPath}/mcp-servers`, { token: setup.key });
  expect(response.status).toBe(200);
  return (await response.json<{ items: McpServerView[] }>()).items;
}

describe("registering an MCP server", () => {
  it("discovers its tools, which the session lists under the prefix as kind mcp; headers and token reach the server but are stored sealed and never answered", async () => {
    const setup = await laneSetup("mcp_register");
    const scope = mcpScope("register");
    const token = "tok_very-secret-bearer-token";
    const created = await putMcpServer(setup, "docs", { url: scope.url, bearerToken: token, headers: { "X-Team": "blue" } });
    expect(created.status).toBe(201);
    const text = await created.text();
    expect(text).not.toContain(token);
    expect(text).not.toContain("blue");
    const view = JSON.parse(text) as McpServerView;
    expect(view).toMatchObject({ name: "docs", prefix: "docs_", status: "ready", toolCount: ALL_TOOLS.length, headerNames: ["X-Team", "Authorization"], replay: "never", skippedTools: [] });
    expect(view.lastRefreshAt).toBeDefined();
    expect(view.tools.map((tool) => tool.name).sort()).toEqual(ALL_TOOLS.map((name) => `docs_${name}`));

    const requests = await scope.requests();
    expect(requests.map((request) => request.method)).toContain("tools/list");
    expect(requests.every((request) => request.authorization === `Bearer ${token}` && request.team === "blue")).toBe(true);

    const { items, mcpServers } = await listTools(setup);
    const echo = items.find((tool) => tool.name === "docs_echo");
    expect(echo).toMatchObject({ kind: "mcp", server: "docs", description: "Says the text back", replay: "never" });
    expect(echo?.parameters).toMatchObject({ type: "object", properties: { text: { type: "string" } } });
    expect(mcpServers).toEqual([{ name: "docs", status: "ready", toolCount: ALL_TOOLS.length, lastRefreshAt: view.lastRefreshAt }]);

    const stored = await runInDurableObject(env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`), (instance: SessionObject) => instance.session().getValue(mcpServer("docs"))?.value);
    expect(stored?.sealedHeaders).toBeDefined();
    expect(JSON.stringify(stored)).not.toContain(token.slice(4));
    expect(JSON.stringify(await listServers(setup))).not.toContain(token);

    // A lane may activate them like any other tool; a second PUT replaces (200).
    await activate(setup, ["docs_echo"]);
    expect((await putMcpServer(setup, "docs", { url: scope.url, bearerToken: token })).status).toBe(200);
  });

  it("an allow-list, a prefix and a per-tool replay shape the tool set; listing reads the cache, never the server", async () => {
    const setup = await laneSetup("mcp_shape");
    const scope = mcpScope("shape");
    const view = await registerMcpServer(setup, "kb", { url: scope.url, prefix: "", allow: ["echo", "hang", "absent"], replay: { echo: "safe" } });
    expect(view.tools).toEqual([
      { name: "echo", remoteName: "echo", replay: "safe" },
      { name: "hang", remoteName: "hang", replay: "never" },
    ]);
    const seen = (await scope.requests()).length;
    const { items } = await listTools(setup);
    expect(items.map((tool) => [tool.name, tool.kind, tool.replay])).toEqual([
      ["echo", "mcp", "safe"],
      ["hang", "mcp", "never"],
    ]);
    await listServers(setup);
    expect(await scope.requests()).toHaveLength(seen);
  });

  it("a session tool keeps its name over an MCP tool, and between servers the one whose name sorts first keeps it; the others report it as skipped", async () => {
    const setup = await laneSetup("mcp_shadow");
    const defined = await call(`${setup.sessionPath}/tools/echo`, { method: "PUT", body: { kind: "client", description: "mine", parameters: { type: "object" } }, token: setup.key });
    expect(defined.status).toBe(201);
    const scope = mcpScope("shadow");
    const later = await registerMcpServer(setup, "b", { url: scope.url, prefix: "", allow: ["broken"] });
    expect(later.tools.map((tool) => tool.name)).toEqual(["broken"]);
    const first = await registerMcpServer(setup, "a", { url: scope.url, prefix: "", allow: ["echo", "broken"] });
    expect(first).toMatchObject({ toolCount: 1, tools: [{ name: "broken" }], skippedTools: [{ name: "echo", reason: "the name echo is already taken in this session" }] });
    const servers = await listServers(setup);
    expect(servers.find((server) => server.name === "b")).toMatchObject({ toolCount: 0, skippedTools: [{ name: "broken", reason: "the name broken is already taken in this session" }] });
    const { items } = await listTools(setup);
    expect(items.map((tool) => [tool.name, tool.kind, tool.server])).toEqual([
      ["echo", "client", undefined],
      ["broken", "mcp", "a"],
    ]);
  });

  it("bad registrations are refused with a documented 4xx and nothing is written", async () => {
    const setup = await laneSetup("mcp_refused");
    const scope = mcpScope("refused");
    const refusals: [string, unknown, number][] = [
      ["docs", { url: "http://example.com/mcp" }, 400],
      ["docs", { url: "ftp://127.0.0.1/mcp" }, 400],
      ["docs", { url: scope.url, headers: { "Content-Type": "text/plain" } }, 400],
      ["docs", { url: scope.url, headers: { "X-A": "line\nbreak" } }, 400],
      ["docs", { url: scope.url, headers: { "X-A": "check ✓" } }, 400],
      ["docs", { url: scope.url, bearerToken: "t", headers: { authorization: "Bearer u" } }, 400],
      ["docs", { url: scope.url, headers: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`X-H${i}`, "v"])) }, 400],
      ["docs", { url: scope.url, prefix: "has space" }, 400],
      ["docs", { url: scope.url, replay: "sometimes" }, 400],
      ["docs", { url: scope.url, timeoutMs: 50 }, 400],
      ["docs", { url: scope.url, unknown: true }, 400],
      ["bad.name", { url: scope.url }, 400],
    ];
    for (const [name, body, status] of refusals) {
      const response = await putMcpServer(setup, name, body);
      expect([name, body, response.status]).toEqual([name, body, status]);
      expect(await errorCode(response)).toBe("ValidationFailed");
    }
    expect(await listServers(setup)).toEqual([]);
    expect(await scope.requests()).toEqual([]);
  });

  it(`a session registers at most ${MAX_SESSION_MCP_SERVERS} servers (422 LimitExceeded); replacing one is still allowed`, async () => {
    const setup = await laneSetup("mcp_bound");
    const scope = mcpScope("bound");
    await scope.control({ down: true });
    for (let i = 0; i < MAX_SESSION_MCP_SERVERS; i++) expect((await putMcpServer(setup, `s${i}`, { url: scope.url })).status).toBe(201);
    const refused = await putMcpServer(setup, "one_more", { url: scope.url });
    expect(refused.status).toBe(422);
    expect(await errorCode(refused)).toBe("LimitExceeded");
    expect((await putMcpServer(setup, "s0", { url: scope.url, prefix: "zero_" })).status).toBe(200);
    expect(await listServers(setup)).toHaveLength(MAX_SESSION_MCP_SERVERS);
  });
});

describe("refreshing and removing an MCP server", () => {
  it("a refresh picks up what the server lists now; a failed one keeps the cached tools and reports the error in both listings", async () => {
    const setup = await laneSetup("mcp_refresh");
    const scope = mcpScope("refresh");
    const first = await registerMcpServer(setup, "docs", { url: scope.url });
    expect(first.toolCount).toBe(ALL_TOOLS.length);

    await scope.control({ hidden: ["huge"] });
    const refreshed = await call(`${setup.sessionPath}/mcp-servers/docs/refresh`, { method: "POST", token: setup.key });
    expect(refreshed.status).toBe(200);
    expect((await refreshed.json<McpServerView>()).tools.map((tool) => tool.remoteName)).not.toContain("huge");

    await scope.control({ down: true });
    const failed = await (await call(`${setup.sessionPath}/mcp-servers/docs/refresh`, { method: "POST", token: setup.key })).json<McpServerView>();
    expect(failed).toMatchObject({ status: "error", toolCount: ALL_TOOLS.length - 1, lastError: { message: "The MCP server docs answered HTTP 503" } });
    const { items, mcpServers } = await listTools(setup);
    expect(items.filter((tool) => tool.kind === "mcp")).toHaveLength(ALL_TOOLS.length - 1);
    expect(mcpServers).toEqual([expect.objectContaining({ name: "docs", status: "error", lastError: expect.objectContaining({ message: "The MCP server docs answered HTTP 503" }) })]);

    await scope.control({});
    expect((await (await call(`${setup.sessionPath}/mcp-servers/docs/refresh`, { method: "POST", token: setup.key })).json<McpServerView>()).status).toBe("ready");
  });

  it("a server whose first discovery fails is registered and listed with its error", async () => {
    const setup = await laneSetup("mcp_down_first");
    const scope = mcpScope("down-first");
    await scope.control({ down: true });
    const view = await registerMcpServer(setup, "docs", { url: scope.url });
    expect(view).toMatchObject({ status: "error", toolCount: 0, lastError: { message: "The MCP server docs answered HTTP 503" } });
    expect(view.lastRefreshAt).toBeUndefined();
    expect((await listTools(setup)).mcpServers).toEqual([expect.objectContaining({ name: "docs", status: "error", toolCount: 0 })]);
  });

  it("a tool the server withdraws stays (withdrawn) while a lane has it active, so the lane's runs still start", async () => {
    const setup = await laneSetup("mcp_withdrawn");
    const scope = mcpScope("withdrawn");
    await registerMcpServer(setup, "docs", { url: scope.url, allow: ["echo", "broken"] });
    await activate(setup, ["docs_echo"]);
    await scope.control({ hidden: ["echo", "broken"] });
    const view = await (await call(`${setup.sessionPath}/mcp-servers/docs/refresh`, { method: "POST", token: setup.key })).json<McpServerView>();
    expect(view.tools).toEqual([{ name: "docs_echo", remoteName: "echo", replay: "never", withdrawn: true }]);
  });

  it("a run that uses a server's tools after its cached list outlived the TTL refreshes the list in the background; the run itself uses the cache", async () => {
    const setup = await laneSetup("mcp_ttl");
    const scope = mcpScope("ttl");
    const registered = await registerMcpServer(setup, "docs", { url: scope.url, allow: ["echo", "broken"] });
    const stub = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
    await runInDurableObject(stub, async (instance: SessionObject) => {
      const session = instance.session();
      const stored = session.getValue(mcpServer("docs"))?.value;
      if (!stored) throw new Error("the server is not stored");
      await session.setValue(mcpServer("docs"), { ...stored, refreshedAt: Date.now() - MCP_DISCOVERY_TTL_MS - 1000 });
    });
    await scope.control({ hidden: ["broken"] });
    await useScript(setup, [{ toolCalls: [{ name: "docs_echo", arguments: { text: "x" } }] }, { text: "done" }]);
    await activate(setup, ["docs_echo"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    let view: McpServerView | undefined;
    for (let i = 0; i < 400; i++) {
      view = (await listServers(setup))[0];
      if (view?.lastRefreshAt !== undefined && view.lastRefreshAt > (registered.lastRefreshAt ?? "")) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(view?.tools.map((tool) => tool.remoteName)).toEqual(["echo"]);
    expect((await scope.requests()).filter((request) => request.method === "tools/list")).toHaveLength(2);
  });

  it("a stale list of a server that is down is asked for once while runs use it, not on every use: the failure waits out its retry delay", async () => {
    const setup = await laneSetup("mcp_ttl_down");
    const scope = mcpScope("ttl-down");
    await registerMcpServer(setup, "docs", { url: scope.url, allow: ["echo"] });
    const stub = env.SESSIONS.getByName(`${setup.tenantId}:${setup.sid}`);
    await runInDurableObject(stub, async (instance: SessionObject) => {
      const session = instance.session();
      const stored = session.getValue(mcpServer("docs"))?.value;
      if (!stored) throw new Error("the server is not stored");
      await session.setValue(mcpServer("docs"), { ...stored, refreshedAt: Date.now() - MCP_DISCOVERY_TTL_MS - 1000 });
    });
    await scope.control({ down: true });
    const listings = async () => (await scope.requests()).filter((request) => request.method === "initialize").length;
    const before = await listings();
    await useScript(setup, [{ toolCalls: [{ name: "docs_echo", arguments: { text: "x" } }] }, { toolCalls: [{ name: "docs_echo", arguments: { text: "y" } }] }, { text: "done" }]);
    await activate(setup, ["docs_echo"]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    for (let i = 0; i < 400 && (await listServers(setup))[0]?.status !== "error"; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect((await listServers(setup))[0]).toMatchObject({ status: "error", toolCount: 1 });
    await useScript(setup, [{ toolCalls: [{ name: "docs_echo", arguments: { text: "z" } }] }, { text: "done again" }]);
    expect((await settle(setup, await prompt(setup))).status).toBe("completed");
    // Every exchange ends at its first request (initialize), answered 503: the three calls, and one discovery.
    expect((await listings()) - before).toBe(4);
  });

  it("delete: 404 McpServerNotFound when absent, 409 ToolInUse while a lane has one of its tools active (so is a new prefix), else 204 and its tools are gone", async () => {
    const setup = await laneSetup("mcp_delete");
    const scope = mcpScope("delete");
    const missing = await call(`${setup.sessionPath}/mcp-servers/nothing`, { method: "DELETE", token: setup.key });
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe("McpServerNotFound");
    expect(await errorCode(await call(`${setup.sessionPath}/mcp-servers/nothing/refresh`, { method: "POST", token: setup.key }))).toBe("McpServerNotFound");

    await registerMcpServer(setup, "docs", { url: scope.url });
    await activate(setup, ["docs_echo"]);
    const inUse = await call(`${setup.sessionPath}/mcp-servers/docs`, { method: "DELETE", token: setup.key });
    expect(inUse.status).toBe(409);
    expect(await errorCode(inUse)).toBe("ToolInUse");
    const renaming = await putMcpServer(setup, "docs", { url: scope.url, prefix: "other_" });
    expect(renaming.status).toBe(409);
    expect(await errorCode(renaming)).toBe("ToolInUse");

    await activate(setup, []);
    expect((await call(`${setup.sessionPath}/mcp-servers/docs`, { method: "DELETE", token: setup.key })).status).toBe(204);
    expect(await listServers(setup)).toEqual([]);
    expect((await listTools(setup)).items).toEqual([]);
    const activating = await call(`${setup.lanePath}/config`, { method: "PATCH", body: { activeTools: ["docs_echo"] }, token: setup.key });
    expect(activating.status).toBe(422);
  });
});

describe("forking a session with MCP servers", () => {
  it("the fork has the servers with their cached tools, and reaches them with the same (re-sealed) credentials", async () => {
    const setup = await laneSetup("mcp_fork");
    const scope = mcpScope("fork");
    await registerMcpServer(setup, "docs", { url: scope.url, bearerToken: "fork-token", allow: ["echo"] });
    const forked = await call(`${setup.sessionPath}/fork`, { body: { scope: "tree" }, token: setup.key });
    expect(forked.status).toBe(201);
    const fork = { key: setup.key, sessionPath: `/v1/sessions/${(await forked.json<{ id: string }>()).id}` };
    expect((await listServers(fork)).map((server) => [server.name, server.toolCount, server.headerNames])).toEqual([["docs", 1, ["Authorization"]]]);
    const refreshed = await (await call(`${fork.sessionPath}/mcp-servers/docs/refresh`, { method: "POST", token: setup.key })).json<McpServerView>();
    expect(refreshed.status).toBe("ready");
    expect((await scope.requests()).every((request) => request.authorization === "Bearer fork-token")).toBe(true);
  });
});
