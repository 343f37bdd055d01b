import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, createTenant, eventsOf, isEvent, openLaneWatch, readAdminToken, settled, transcriptText, fold, type WatchClient } from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";
import { startProviderFixture } from "./provider-fixture-server.ts";

// docs/providers.md against `npm start`: a tenant puts its own OpenAI key with a base URL that
// points at a local fixture host (loopback http is allowed in local development), creates a lane
// on openai/gpt-5-mini and prompts it; a WebSocket watcher sees the reply stream.

describe("a tenant's own provider key, end to end", () => {
  let server: DevServer;
  let fixture: Awaited<ReturnType<typeof startProviderFixture>>;
  let api: Api;
  const sockets: WatchClient[] = [];
  const words = Array.from({ length: 12 }, (_, index) => `token${index}`);
  const apiKey = "sk-e2e-tenant-openai-key-0042";

  beforeAll(async () => {
    fixture = await startProviderFixture(words);
    server = await startDevServer();
    api = (await createTenant(new Api(server.baseUrl, readAdminToken()), "byok")).api;
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    for (const socket of sockets) await socket.close();
    await server?.stop();
    await fixture?.close();
  });

  it("puts the key (never echoed), runs a prompt through the provider, and streams it to a watcher", async () => {
    const stored = await api.expect<Record<string, unknown>>(200, "PUT", "/v1/providers/openai", { body: { apiKey, baseUrl: fixture.baseUrl } });
    expect(stored).toEqual({ provider: "openai", source: "tenant", keyHint: "…0042", baseUrl: fixture.baseUrl });
    expect(JSON.stringify(await api.expect(200, "GET", "/v1/providers"))).not.toContain(apiKey);
    const models = await api.expect<{ provider: string; modelId: string }[]>(200, "GET", "/v1/models");
    expect(models.some((row) => row.provider === "openai" && row.modelId === "gpt-5-mini")).toBe(true);

    const sid = "byok";
    await api.expect(201, "POST", "/v1/sessions", { body: { id: sid } });
    await api.expect(201, "PUT", `/v1/sessions/${sid}/lanes/main`, { body: { model: { provider: "openai", modelId: "gpt-5-mini" } } });
    const client = await openLaneWatch(server.baseUrl, key(api), sid, "main");
    sockets.push(client);
    const first = await client.next();
    if (first.type !== "snapshot") throw new Error("Expected a snapshot first");

    const { operationId } = await api.expect<{ operationId: string }>(202, "POST", `/v1/sessions/${sid}/lanes/main/operations`, { body: { kind: "prompt", prompt: "hello" } });
    await client.until(isEvent("message_update", operationId));
    expect(await settled(api, sid, operationId)).toMatchObject({ status: "completed" });
    await client.until(isEvent("run_end", operationId));
    const received = eventsOf(client.log.slice(1));
    expect(received.filter((entry) => entry.event.type === "message_update").length).toBeGreaterThan(0);

    const text = transcriptText(fold(first.snapshot, received.map((entry) => entry.event)));
    expect(text).toEqual(["user: hello", `assistant: ${words.join(" ")}`]);
    expect(fixture.requests).toHaveLength(1);
    expect(fixture.requests[0]).toMatchObject({ path: "/v1/responses", authorization: `Bearer ${apiKey}`, body: { model: "gpt-5-mini", stream: true } });

    const usage = await api.expect<{ totals: { input: number; output: number; cost: { total: number } } }>(200, "GET", `/v1/sessions/${sid}/usage`);
    expect(usage.totals).toMatchObject({ input: 50, output: words.length });
    expect(usage.totals.cost.total).toBeGreaterThan(0);
  }, 90_000);

  it("a session created from an agent runs with the agent's model, system prompt and tools: the provider request shows them", async () => {
    const gpt = { provider: "openai", modelId: "gpt-5-mini" };
    const parameters = { type: "object", properties: { order: { type: "string" } }, required: ["order"] };
    await api.expect(201, "PUT", "/v1/tools/lookup_order", { body: { kind: "http", description: "Looks up an order", parameters, url: "https://tools.example.com/orders" } });
    await api.expect(201, "POST", "/v1/agents", {
      body: { id: "shop", model: gpt, settings: { systemPrompt: "You are the shop assistant." }, tools: { lookup_order: { kind: "tenant", tool: "lookup_order" }, current_time: { kind: "builtin" } } },
    });
    const session = await api.expect<{ id: string; agent: unknown }>(201, "POST", "/v1/sessions", { body: { agent: "shop", metadata: { user: "u_1" } } });
    expect(session.agent).toEqual({ id: "shop", version: 1 });
    const before = fixture.requests.length;
    const record = await api.expect<{ status: string; agent: unknown }>(200, "POST", `/v1/sessions/${session.id}/lanes/main/prompt`, { body: { prompt: "where is my order?", wait: 30 } });
    expect(record).toMatchObject({ status: "completed", agent: { id: "shop", version: 1 } });
    const request = fixture.requests[before];
    expect(request).toMatchObject({ path: "/v1/responses", body: { model: "gpt-5-mini" } });
    expect(JSON.stringify(request?.body)).toContain("You are the shop assistant.");
    const body = request?.body;
    const tools = typeof body === "object" && body !== null && "tools" in body && Array.isArray(body.tools) ? body.tools : [];
    expect(tools.map((tool: { name?: string }) => tool.name).sort()).toEqual(["current_time", "lookup_order"]);
  }, 90_000);

  it("the tenant's default model is what a lane created without a model gets", async () => {
    const gpt = { provider: "openai", modelId: "gpt-5-mini" };
    expect(await api.expect(200, "PUT", "/v1/me/default-model", { body: gpt })).toEqual(gpt);
    expect(await api.expect<{ defaultModel: unknown }>(200, "GET", "/v1/me")).toMatchObject({ defaultModel: gpt });
    await api.expect(201, "POST", "/v1/sessions", { body: { id: "byok-default" } });
    await api.expect(201, "PUT", "/v1/sessions/byok-default/lanes/main");
    const lane = await api.expect<{ configuration: { model: unknown } }>(200, "GET", "/v1/sessions/byok-default/lanes/main");
    expect(lane.configuration.model).toEqual(gpt);
  }, 90_000);
});

function key(api: Api): string {
  return api.token;
}
