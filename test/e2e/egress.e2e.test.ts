import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { McpServerView } from "../../schema/mcp.ts";
import type { WebhookDelivery } from "../../schema/webhooks.ts";
import { INTERNAL_URLS } from "../helpers/internal-urls.ts";
import { startEgressFixtures, type EgressFixtures, type TripwireLog } from "../node/egress-fixtures.ts";
import { startMcpTestServer, type McpTestServer, type RecordedMcpRequest } from "../node/mcp-test-server.ts";
import { Api, createTenant, pollUntil, readAdminToken, settled } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// Issue 30 items 7–9 against `npm start`. With LOCAL_DEV on (npm start's default), a provider base
// URL that redirects to a metadata path fails the run and the target gets nothing, and connection
// failures read as the documented sentences; an http tool, an MCP server, a webhook and a provider
// base URL are registered on loopback. The same state is then served with LOCAL_DEV off
// (`--var LOCAL_DEV:off`, as a deployment has it): every registration route refuses the internal
// addresses, and what was stored in local development is refused at call time. The tripwire, a
// loopback listener counting connections (test/node/egress-fixtures.ts), is never reached.

const ARGS = { type: "object", properties: { question: { type: "string" } } };
const SID = "egress-e2e";
const LANE = `/v1/sessions/${SID}/lanes/main`;

describe("egress end to end", () => {
  let fixtures: EgressFixtures;
  let mcp: McpTestServer;
  let persistDir: string;
  let server: DevServer | undefined;
  let key = "";
  let webhookId = "";

  const tripwire = async (): Promise<TripwireLog> => (await fetch(`${fixtures.fixturesUrl}/tripwire`)).json() as Promise<TripwireLog>;
  const mcpRequests = async (): Promise<RecordedMcpRequest[]> => (await fetch(`${mcp.url}/calls/egress`)).json() as Promise<RecordedMcpRequest[]>;

  beforeAll(async () => {
    fixtures = await startEgressFixtures();
    mcp = await startMcpTestServer();
    persistDir = mkdtempSync(join(tmpdir(), "das-e2e-egress-"));
  });
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    await server?.stop();
    rmSync(persistDir, { recursive: true, force: true });
    await mcp?.close();
    await fixtures?.close();
  });

  it("LOCAL_DEV on: a redirecting provider fails the run, connection failures say one thing; loopback URLs are registered", async () => {
    server = await startDevServer({ persistDir });
    const { api, key: tenantKey } = await createTenant(new Api(server.baseUrl, readAdminToken()), "egress");
    key = tenantKey;

    // Item 8: the base URL answers 307 to the tripwire's /latest/meta-data.
    await api.expect(200, "PUT", "/v1/providers/openai", { body: { apiKey: "sk-e2e-egress-0001", baseUrl: `${fixtures.fixturesUrl}/redirect/v1` } });
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "egress-redirect" } });
    await api.expect(201, "PUT", "/v1/sessions/egress-redirect/lanes/main", { body: { model: { provider: "openai", modelId: "gpt-5-mini" } } });
    const redirected = await runPrompt(api, "egress-redirect");
    expect(redirected).toMatchObject({
      status: "failed",
      error: { code: "provider_error", message: "Provider openai answered with a redirect (HTTP 307), which provider requests never follow; set the provider's final address as its baseUrl" },
    });

    // Item 9: a refused connection and a reset, for an MCP server and for http tools.
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "egress-conn" } });
    for (const [name, url] of [["refused", `${fixtures.closedUrl}/mcp`], ["reset", `${fixtures.fixturesUrl}/reset/mcp`]] as const) {
      const view = await api.expect<McpServerView>(201, "PUT", `/v1/sessions/egress-conn/mcp-servers/${name}`, { body: { url } });
      expect(view).toMatchObject({ status: "error", lastError: { message: `The MCP server ${name} could not be reached` } });
      await api.expect(201, "PUT", `/v1/sessions/egress-conn/tools/${name}_tool`, { body: { kind: "http", description: "d", parameters: ARGS, url: url.replace(/mcp$/, "tool") } });
    }
    await api.expect(201, "PUT", "/v1/sessions/egress-conn/lanes/main", { body: { model: { provider: "scripted", modelId: "script" }, activeTools: ["refused_tool", "reset_tool"] } });
    await api.expect(201, "POST", "/v1/sessions/egress-conn/lists/scripted/steps", {
      body: { toolCalls: [{ name: "refused_tool", arguments: { question: "q" } }, { name: "reset_tool", arguments: { question: "q" } }] },
    });
    await api.expect(201, "POST", "/v1/sessions/egress-conn/lists/scripted/steps", { body: { text: "carried on" } });
    expect((await runPrompt(api, "egress-conn")).status).toBe("completed");
    expect(await toolResultTexts(api, "egress-conn")).toEqual(["The tool endpoint could not be reached", "The tool endpoint could not be reached"]);

    // Stored here, called after the restart with LOCAL_DEV off.
    await api.expect(201, "POST", "/v1/sessions", { body: { id: SID } });
    await api.expect(201, "PUT", `${LANE}`, { body: {} });
    await api.expect(201, "PUT", `/v1/sessions/${SID}/tools/lookup`, { body: { kind: "http", description: "d", parameters: ARGS, url: `${fixtures.tripwireUrl}/hook` } });
    const registered = await api.expect<McpServerView>(201, "PUT", `/v1/sessions/${SID}/mcp-servers/kb`, { body: { url: `${mcp.url}/mcp/egress`, prefix: "", allow: ["echo"] } });
    expect(registered).toMatchObject({ status: "ready", toolCount: 1 });
    webhookId = (await api.expect<{ id: string }>(201, "POST", "/v1/webhooks", { body: { url: `${fixtures.tripwireUrl}/hook`, events: ["operation.settled"] } })).id;
    await api.expect(200, "PUT", "/v1/providers/anthropic", { body: { apiKey: "sk-ant-e2e-egress-0001", baseUrl: `${fixtures.tripwireUrl}/v1` } });
    await api.expect(200, "PATCH", `${LANE}/config`, { body: { model: { provider: "scripted", modelId: "script" }, activeTools: ["lookup", "echo"] } });
    await api.expect(201, "POST", `/v1/sessions/${SID}/lists/scripted/steps`, {
      body: { toolCalls: [{ name: "lookup", arguments: { question: "q" } }, { name: "echo", arguments: { text: "hi" } }] },
    });
    await api.expect(201, "POST", `/v1/sessions/${SID}/lists/scripted/steps`, { body: { text: "carried on" } });
    await server.stop();
    server = undefined;
    expect(await tripwire()).toEqual({ connections: 0, requests: [] });
  }, 120_000);

  it("LOCAL_DEV off: every registration route refuses the internal addresses (and loopback http) with reason unsafe_address", async () => {
    server = await startDevServer({ persistDir, extraArgs: ["--var", "LOCAL_DEV:off"] });
    const api = new Api(server.baseUrl, key);
    const urls = [...INTERNAL_URLS, [`${fixtures.tripwireUrl}/hook`, "loopback"] as const];
    for (const [url, rule] of urls) {
      const base = await api.request<{ error: { code: string; details?: Record<string, unknown> } }>("PUT", "/v1/providers/openai", { body: { apiKey: "sk-e2e-egress-0002", baseUrl: url } });
      expect({ url, status: base.status, error: base.body.error }).toMatchObject({ url, status: 422, error: { code: "InvalidBaseUrl", details: { reason: "unsafe_address", rule } } });
      const hook = await api.request<{ error: { code: string } }>("POST", "/v1/webhooks", { body: { url, events: ["operation.settled"] } });
      expect({ url, status: hook.status, error: hook.body.error }).toMatchObject({ url, status: 422, error: { code: "InvalidWebhookUrl", details: { reason: "unsafe_address", rule } } });
      const tool = await api.request<{ error: { code: string } }>("PUT", `/v1/sessions/${SID}/tools/other`, { body: { kind: "http", description: "d", parameters: ARGS, url } });
      expect({ url, status: tool.status, error: tool.body.error }).toMatchObject({ url, status: 400, error: { code: "ValidationFailed", details: { field: "url", reason: "unsafe_address", rule } } });
      const mcpServer = await api.request<{ error: { code: string } }>("PUT", `/v1/sessions/${SID}/mcp-servers/other`, { body: { url } });
      expect({ url, status: mcpServer.status, error: mcpServer.body.error }).toMatchObject({ url, status: 400, error: { code: "ValidationFailed", details: { field: "url", reason: "unsafe_address", rule } } });
    }
    expect(await tripwire()).toEqual({ connections: 0, requests: [] });
  }, 120_000);

  it("LOCAL_DEV off: what was stored in local development is refused at call time; nothing is contacted", async () => {
    if (!server) throw new Error("the server of the previous test is not running");
    const api = new Api(server.baseUrl, key);
    const loopbackWords = (host: string): string => `a loopback address: ${host} (127.0.0.0/8)`;
    const record = await runPrompt(api, SID);
    expect(record.status).toBe("completed");
    expect(await toolResultTexts(api, SID)).toEqual([
      `The tool endpoint was not contacted: url may not point at ${loopbackWords("127.0.0.1")}`,
      `The MCP server kb was not contacted: url may not point at ${loopbackWords("127.0.0.1")}`,
    ]);

    const delivery = await pollUntil(
      "the webhook's first attempt",
      async () => (await api.expect<{ items: WebhookDelivery[] }>(200, "GET", `/v1/webhooks/${webhookId}/deliveries`)).items[0],
      (item) => (item?.attempts ?? 0) >= 1,
      30_000,
    );
    expect(delivery?.lastError).toBe(`blocked: the endpoint was not contacted: url may not point at ${loopbackWords("127.0.0.1")}`);

    await api.expect(200, "PATCH", `${LANE}/config`, { body: { model: { provider: "anthropic", modelId: "claude-sonnet-4-5" }, activeTools: [] } });
    const provider = await runPrompt(api, SID);
    expect(provider).toMatchObject({ status: "failed", error: { code: "provider_error", message: `Provider anthropic was not contacted: baseUrl may not point at ${loopbackWords("127.0.0.1")}` } });

    expect(await tripwire()).toEqual({ connections: 0, requests: [] });
    // The MCP server saw its discovery in local development, and no call since.
    expect((await mcpRequests()).filter((request) => request.method === "tools/call")).toEqual([]);
  }, 120_000);
});

interface RunRecord {
  status: string;
  error?: { code: string; message: string };
}

/** The text of every tool result on the session's lane `main`, oldest first. */
async function toolResultTexts(api: Api, sid: string): Promise<string[]> {
  const snapshot = await api.expect<{ snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
  return snapshot.snapshot.transcript.flatMap((entry) =>
    entry.type === "message" && entry.message.role === "toolResult" ? [entry.message.content.map((block) => (block.type === "text" ? block.text : "")).join("")] : [],
  );
}

async function runPrompt(api: Api, sid: string): Promise<RunRecord> {
  const { operationId } = await api.expect<{ operationId: string }>(202, "POST", `/v1/sessions/${sid}/lanes/main/operations`, { body: { kind: "prompt", prompt: "go" } });
  const record: RunRecord = await settled(api, sid, operationId);
  return record;
}
