import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { z } from "zod";
import type { RecordedMcpRequest } from "../mcp-recorded-request.ts";
import { listenOnLoopback, readBody } from "./loopback-server.ts";

export type { RecordedMcpRequest };

/**
 * A tenant's MCP server, written with the official SDK (`McpServer` + the streamable HTTP
 * transport, stateless: a fresh server per request). Tests talk to it over plain HTTP:
 *
 * - `POST /mcp/{scope}`: the MCP endpoint of one test's scope. Its tools: `echo` (the text back),
 *   `picture` (a text and a 1×1 PNG), `broken` (an `isError` result), `hang` (never answers),
 *   `park_first` (the first call of the scope never answers, later ones do), `huge` (300 KiB of text);
 * - `PUT /control/{scope}` `{ down?, hidden? }`: `down` answers every MCP request of the scope with
 *   503; `hidden` names tools `tools/list` leaves out;
 * - `GET /calls/{scope}`: every request of the scope in arrival order: its JSON-RPC method, the
 *   tool and arguments of a call, the Authorization and X-Team headers, and `abandoned` when the
 *   caller went away before the answer (an abort or a timeout reached the server).
 *
 * A scope is one test's own namespace, so tests running side by side never see each other's calls.
 */

export interface McpTestServer {
  url: string;
  close(): Promise<void>;
}

interface ScopeControl {
  down: boolean;
  hidden: string[];
}

/** A 1×1 transparent PNG. */
export const PIXEL_PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

export async function startMcpTestServer(): Promise<McpTestServer> {
  const requests = new Map<string, RecordedMcpRequest[]>();
  const controls = new Map<string, ScopeControl>();
  const open = new Set<ServerResponse>();

  function mcpServerFor(scope: string): McpServer {
    const server = new McpServer({ name: "test-tools", version: "1.0.0" });
    const hidden = new Set(controls.get(scope)?.hidden ?? []);
    const never = () => new Promise<never>(() => {});
    const tools: [string, () => void][] = [
      ["echo", () => server.registerTool("echo", { description: "Says the text back", inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }))],
      [
        "picture",
        () =>
          server.registerTool("picture", { description: "Draws a picture" }, () => ({
            content: [
              { type: "text", text: "a pixel:" },
              { type: "image", data: PIXEL_PNG_BASE64, mimeType: "image/png" },
            ],
          })),
      ],
      ["broken", () => server.registerTool("broken", { description: "Always fails" }, () => ({ content: [{ type: "text", text: "the widget is broken" }], isError: true }))],
      ["hang", () => server.registerTool("hang", { description: "Never answers" }, never)],
      [
        "park_first",
        () =>
          server.registerTool("park_first", { description: "The first call never answers" }, () => {
            const calls = (requests.get(scope) ?? []).filter((request) => request.tool === "park_first").length;
            return calls === 1 ? never() : { content: [{ type: "text", text: `answered call ${calls}` }] };
          }),
      ],
      ["huge", () => server.registerTool("huge", { description: "Answers a lot" }, () => ({ content: [{ type: "text", text: "x".repeat(300 * 1024) }] }))],
    ];
    for (const [name, register] of tools) if (!hidden.has(name)) register();
    return server;
  }

  async function serveMcp(request: IncomingMessage, response: ServerResponse, scope: string, raw: string): Promise<void> {
    const body = parseJson(raw);
    const message = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const params = typeof message.params === "object" && message.params !== null ? (message.params as Record<string, unknown>) : {};
    const record: RecordedMcpRequest = {
      method: typeof message.method === "string" ? message.method : request.method ?? "?",
      ...(message.method === "tools/call" && { tool: String(params.name), arguments: params.arguments, ...(params._meta !== undefined && { meta: params._meta }) }),
      authorization: single(request.headers.authorization),
      team: single(request.headers["x-team"]),
      abandoned: false,
    };
    requests.set(scope, [...(requests.get(scope) ?? []), record]);
    if (controls.get(scope)?.down) {
      response.writeHead(503, { "content-type": "text/plain" }).end("down for maintenance");
      return;
    }
    if (request.method !== "POST") {
      response.writeHead(405, { allow: "POST" }).end();
      return;
    }
    open.add(response);
    response.on("close", () => {
      open.delete(response);
      if (!response.writableFinished) record.abandoned = true;
    });
    const server = mcpServerFor(scope);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  }

  const server: Server = createServer((request, response) => {
    readBody(request).then(
      (raw) => route(request, response, raw),
      () => response.destroy(),
    );
  });

  function route(request: IncomingMessage, response: ServerResponse, raw: string): void {
    const [, area, scope = ""] = (request.url ?? "").split("?")[0]?.split("/") ?? [];
    if (area === "mcp") {
      serveMcp(request, response, scope, raw).catch(() => response.destroy());
    } else if (request.method === "PUT" && area === "control") {
      const control = parseJson(raw);
      const given = typeof control === "object" && control !== null ? (control as Partial<ScopeControl>) : {};
      controls.set(scope, { down: given.down === true, hidden: Array.isArray(given.hidden) ? given.hidden : [] });
      response.writeHead(204).end();
    } else if (request.method === "GET" && area === "calls") {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(requests.get(scope) ?? []));
    } else {
      response.writeHead(404).end();
    }
  }

  return listenOnLoopback(server, open);
}

function single(value: string | string[] | undefined): string | null {
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

function parseJson(raw: string): unknown {
  try {
    return raw.length === 0 ? undefined : JSON.parse(raw);
  } catch {
    return raw;
  }
}
