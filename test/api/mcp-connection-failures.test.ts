import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ToolOutput } from "../../harness/execution/tools.ts";
import type { JsonObject } from "../../schema/json.ts";
import type { StoredMcpServer } from "../../tools/mcp-definitions.ts";
import { discoverMcpTools } from "../../tools/mcp-discovery.ts";
import { mcpTool } from "../../tools/mcp-tool.ts";

// docs/security.md "Connection failures": when a request of an MCP server gets no answer — "connection
// refused, reset, closed mid-answer, …" — the tenant (and the model, for a call) reads "The MCP server
// {name} could not be reached", at once; "did not answer within {ms} ms" is for no whole answer in
// time. An MCP server written with the official SDK answers requests as an event stream
// (text/event-stream), so "closed mid-answer" is a stream that ends or breaks before the response.

const TIMEOUT_MS = 1_500;

const server: StoredMcpServer = {
  url: "https://mcp.example.com/mcp",
  prefix: "docs_",
  replay: "never",
  timeoutMs: TIMEOUT_MS,
  headerNames: [],
  revision: "r1",
  tools: [{ name: "echo", description: "echo", parameters: { type: "object" } }],
  skippedTools: [],
};

type Answer = (id: unknown) => Response;

/** A fake MCP server (streamable HTTP, stateless) that answers `method` with `answer`. */
function fakeServer(method: string, answer: Answer): typeof fetch {
  return async (input, init) => {
    const httpMethod = init?.method ?? (input instanceof Request ? input.method : "GET");
    if (httpMethod !== "POST") return new Response(null, { status: 405 });
    const raw = typeof init?.body === "string" ? init.body : await new Response(init?.body ?? null).text();
    const message = JSON.parse(raw) as { id?: unknown; method?: string };
    if (message.method === "initialize") {
      return Response.json({ jsonrpc: "2.0", id: message.id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "fake", version: "1.0.0" } } });
    }
    if (message.id === undefined) return new Response(null, { status: 202 });
    if (message.method === method) return answer(message.id);
    return Response.json({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "not here" } });
  };
}

const encoder = new TextEncoder();

/** An event stream that sends `events` and then breaks as a reset connection does. */
function breakingStream(events: string): Response {
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(encoder.encode(events));
        return;
      }
      controller.error(new TypeError("Network connection lost."));
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

function closingStream(events: string): Response {
  return new Response(events, { status: 200, headers: { "content-type": "text/event-stream" } });
}

async function callTool(fetcher: typeof fetch): Promise<string> {
  const cached = server.tools[0];
  if (!cached) throw new Error("fixture");
  const tool = mcpTool("s-1", "docs_echo", { serverName: "docs", server, tool: cached }, { secretsKey: env.SECRETS_KEY, allowLoopback: false, fetch: fetcher }, (invocation, toolCallId) => ({
    tenantId: "t",
    sessionId: "s-1",
    lane: "main",
    operationId: invocation.operationId,
    toolCallId,
    invocationId: invocation.invocationId,
    metadata: {},
  }));
  const invocation = { invocationId: "inv-1", operationId: "op-1", lane: "main", turnId: "turn-1", getMemo: async () => undefined, setMemo: async () => undefined };
  const args: JsonObject = {};
  try {
    const output: ToolOutput = await tool.execute(args, { toolCallId: "call-1", signal: new AbortController().signal, onUpdate: () => undefined, invocation });
    return `answered: ${JSON.stringify(output.content)}`;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The time `run` took, with what it returned. */
async function timed<T>(run: () => Promise<T>): Promise<{ value: T; fast: boolean }> {
  const started = Date.now();
  const value = await run();
  return { value, fast: Date.now() - started < TIMEOUT_MS };
}

describe("an MCP server whose event-stream answer is cut off", () => {
  it("a call whose stream breaks (connection reset) before the result reads 'could not be reached' at once", async () => {
    const answer = await timed(() => callTool(fakeServer("tools/call", () => breakingStream(": working\n\n"))));
    expect(answer).toEqual({ value: "The MCP server docs could not be reached", fast: true });
  });

  it("a call whose stream the server closes before the result event reads 'could not be reached' at once", async () => {
    const answer = await timed(() => callTool(fakeServer("tools/call", () => closingStream(": working\n\n"))));
    expect(answer).toEqual({ value: "The MCP server docs could not be reached", fast: true });
  });

  it("a result that arrived before the stream broke is the call's answer", async () => {
    const result = (id: unknown) => `event: message\r\ndata: ${JSON.stringify({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "hi" }] } })}\r\n\r\n`;
    expect(await callTool(fakeServer("tools/call", (id) => breakingStream(result(id))))).toBe(`answered: ${JSON.stringify([{ type: "text", text: "hi" }])}`);
  });

  it("a discovery whose tools/list stream ends before the list reads 'could not be reached' at once", async () => {
    const settings = { secretsKey: env.SECRETS_KEY, allowLoopback: false, fetch: fakeServer("tools/list", () => closingStream(": listing\n\n")) };
    const answer = await timed(async () => {
      try {
        await discoverMcpTools({ sessionId: "s-1", serverName: "docs", server }, settings, new AbortController().signal);
        return "listed";
      } catch (error) {
        return error instanceof Error ? error.message : String(error);
      }
    });
    expect(answer).toEqual({ value: "The MCP server docs could not be reached", fast: true });
  });
});
