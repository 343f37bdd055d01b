import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import type { McpServerView } from "../../schema/mcp.ts";
import { PIXEL_PNG_BASE64, startMcpTestServer, type McpTestServer, type RecordedMcpRequest } from "../node/mcp-test-server.ts";
import { Api, createTenant, eventsOf, fold, isEvent, openLaneWatch, readAdminToken, settled, type WatchClient } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// docs/tools.md "MCP servers" against `npm start`: a local MCP server (the official SDK's, over
// streamable HTTP on loopback, which local development allows) is registered with a bearer token;
// a scripted run calls three of its tools at once and a WebSocket watcher sees tool_start and
// tool_end for each — its folded snapshot equals a fresh one.

type ToolEvent = Extract<HarnessEvent, { type: "tool_start" | "tool_end" }>;
const isToolEvent = (event: HarnessEvent): event is ToolEvent => event.type === "tool_start" || event.type === "tool_end";

describe("MCP servers end to end", () => {
  let server: DevServer;
  let mcp: McpTestServer;
  let api: Api;
  const sockets: WatchClient[] = [];

  beforeAll(async () => {
    mcp = await startMcpTestServer();
    server = await startDevServer();
    api = (await createTenant(new Api(server.baseUrl, readAdminToken()), "mcp")).api;
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    for (const socket of sockets) await socket.close();
    await server?.stop();
    await mcp?.close();
  });

  it("registers a local MCP server, a scripted run calls its tools, and the watcher sees every tool event", async () => {
    const sid = "mcp-e2e";
    await api.expect(201, "POST", "/v1/sessions", { body: { id: sid } });
    const registered = await api.expect<McpServerView>(201, "PUT", `/v1/sessions/${sid}/mcp-servers/kb`, {
      body: { url: `${mcp.url}/mcp/e2e`, bearerToken: "e2e-token", allow: ["echo", "picture", "broken"], replay: { echo: "safe" } },
    });
    expect(registered).toMatchObject({ status: "ready", toolCount: 3 });
    const listed = await api.expect<{ items: { name: string; kind: string }[] }>(200, "GET", `/v1/sessions/${sid}/tools`);
    expect(listed.items.map((tool) => [tool.name, tool.kind]).sort()).toEqual([
      ["kb_broken", "mcp"],
      ["kb_echo", "mcp"],
      ["kb_picture", "mcp"],
    ]);

    await api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/main`, { body: { model: { provider: "scripted", modelId: "script" }, activeTools: ["kb_echo", "kb_picture", "kb_broken"] } });
    const steps = [
      { toolCalls: [{ name: "kb_echo", arguments: { text: "hello" } }, { name: "kb_picture", arguments: {} }, { name: "kb_broken", arguments: {} }] },
      { text: "Done with the tools." },
    ];
    for (const step of steps) await api.expect(201, "POST", `/v1/sessions/${sid}/lists/scripted/steps`, { body: step });

    const client = await openLaneWatch(server.baseUrl, api.token, sid, "main");
    sockets.push(client);
    const first = await client.next();
    if (first.type !== "snapshot") throw new Error("Expected a snapshot first");

    const { operationId } = await api.expect<{ operationId: string }>(202, "POST", `/v1/sessions/${sid}/lanes/main/operations`, { body: { kind: "prompt", prompt: "use the tools" } });
    expect(await settled(api, sid, operationId)).toMatchObject({ status: "completed" });
    await client.until(isEvent("run_end", operationId));
    const events = eventsOf(client.log.slice(1)).map((entry) => entry.event);
    expect(events.filter((event) => event.type === "fault")).toEqual([]);
    const toolEvents = events.filter(isToolEvent);
    for (const name of ["kb_echo", "kb_picture", "kb_broken"]) {
      expect(toolEvents.filter((event) => event.toolName === name).map((event) => event.type)).toEqual(["tool_start", "tool_end"]);
    }
    expect(toolEvents.find((event) => event.type === "tool_start" && event.toolName === "kb_echo")).toMatchObject({ args: { text: "hello" } });
    expect(toolEvents.filter((event) => event.type === "tool_end").map((event) => [event.toolName, event.type === "tool_end" && event.isError])).toEqual(
      expect.arrayContaining([
        ["kb_echo", false],
        ["kb_picture", false],
        ["kb_broken", true],
      ]),
    );

    const fresh = await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
    expect(fold(first.snapshot, events)).toEqual(fresh.snapshot);
    const results = fresh.snapshot.transcript.flatMap((entry) => (entry.type === "message" && entry.message.role === "toolResult" ? [entry.message.content] : []));
    expect(results).toEqual([
      [{ type: "text", text: "echo: hello" }],
      [{ type: "text", text: "a pixel:" }, { type: "image", data: PIXEL_PNG_BASE64, mimeType: "image/png" }],
      [{ type: "text", text: "the widget is broken" }],
    ]);
    const requests: RecordedMcpRequest[] = await (await fetch(`${mcp.url}/calls/e2e`)).json();
    expect(requests.filter((request) => request.method === "tools/call").map((request) => request.tool).sort()).toEqual(["broken", "echo", "picture"]);
    expect(requests.every((request) => request.authorization === "Bearer e2e-token")).toBe(true);
  }, 90_000);
});
