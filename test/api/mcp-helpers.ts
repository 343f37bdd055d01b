import { expect, inject } from "vitest";
import "../provided-context.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { McpServerView } from "../../schema/mcp.ts";
import type { ToolContent } from "../../harness/execution/tools.ts";
import { call } from "./helpers.ts";
import type { ApiLane } from "./tool-api-helpers.ts";
import type { RecordedMcpRequest } from "../mcp-recorded-request.ts";

// MCP servers over the REST API, as a tenant drives them, and the local MCP server
// (test/node/mcp-test-server.ts, the official SDK's) the tests register over real HTTP.

let scopes = 0;

/** A scope of the local MCP server: its endpoint, a switch to take it down or hide tools, and what it received. */
export function mcpScope(prefix: string) {
  const base = inject("mcpServerUrl");
  const scope = `${prefix}-${Date.now().toString(36)}-${(scopes++).toString(36)}`;
  return {
    url: `${base}/mcp/${scope}`,
    async control(control: { down?: boolean; hidden?: string[] }): Promise<void> {
      const set = await fetch(`${base}/control/${scope}`, { method: "PUT", body: JSON.stringify(control) });
      expect(set.status).toBe(204);
    },
    async requests(): Promise<RecordedMcpRequest[]> {
      return (await fetch(`${base}/calls/${scope}`)).json<RecordedMcpRequest[]>();
    },
    async calls(): Promise<RecordedMcpRequest[]> {
      return (await this.requests()).filter((request) => request.method === "tools/call");
    },
  };
}

export function putMcpServer(setup: Pick<ApiLane, "key" | "sessionPath">, name: string, body: unknown): Promise<Response> {
  return call(`${setup.sessionPath}/mcp-servers/${name}`, { method: "PUT", body, token: setup.key });
}

export async function registerMcpServer(setup: Pick<ApiLane, "key" | "sessionPath">, name: string, body: unknown): Promise<McpServerView> {
  const response = await putMcpServer(setup, name, body);
  expect(response.status).toBe(201);
  return response.json<McpServerView>();
}

/** Polls until the local server has received a call of `tool` (bounded, no timing assertion). */
export async function untilCalled(scope: ReturnType<typeof mcpScope>, tool: string, count = 1): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if ((await scope.calls()).filter((request) => request.tool === tool).length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`the MCP server never received a call of ${tool}`);
}

/** The content of every tool result placed on the lane's branch, oldest first. */
export async function placedResults(setup: Pick<ApiLane, "key" | "lanePath">): Promise<{ toolName: string; content: ToolContent; isError: boolean }[]> {
  const snapshot = await (await call(`${setup.lanePath}/snapshot`, { token: setup.key })).json<{ snapshot: LaneSnapshot }>();
  return snapshot.snapshot.transcript.flatMap((entry) =>
    entry.type === "message" && entry.message.role === "toolResult" ? [{ toolName: entry.message.toolName, content: entry.message.content, isError: entry.message.isError }] : [],
  );
}
