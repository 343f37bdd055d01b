import { describe, expect, it } from "vitest";
import { AGENT_PAGE_BYTES_MAX, MAX_AGENT_VERSION_BYTES, MAX_AGENT_VERSIONS, MAX_AGENTS, MAX_METADATA_KEYS, type Agent } from "../../schema/agents.ts";
import { call, newTenant } from "./helpers.ts";
import { ARGS_SCHEMA } from "./tool-api-helpers.ts";

// The bounds and checks of agent definitions (docs/agents.md): each refusal is a documented 4xx
// and writes nothing (the listing and the latest version are as before).

const ECHO = { provider: "scripted", modelId: "echo" };

async function refusal(response: Response): Promise<{ status: number; code: string | undefined; details: unknown; message: string | undefined }> {
  const body = await response.json<{ error?: { code: string; message: string; details?: unknown } }>();
  return { status: response.status, code: body.error?.code, details: body.error?.details, message: body.error?.message };
}

async function created(key: string, body: unknown): Promise<Agent> {
  const response = await call("/v1/agents", { body, token: key });
  if (response.status !== 201) throw new Error(`create: ${response.status} ${await response.text()}`);
  return response.json<Agent>();
}

const listed = async (key: string): Promise<unknown> => (await call("/v1/agents?limit=1000", { token: key })).json();
const latest = async (key: string, id: string): Promise<unknown> => (await call(`/v1/agents/${id}`, { token: key })).json();

describe("agent bounds", () => {
  it(`a tenant holds at most ${MAX_AGENTS} live agents; a deletion makes room`, { timeout: 120_000 }, async () => {
    const { key } = await newTenant("agentcount");
    for (let i = 0; i < MAX_AGENTS; i++) await created(key, { id: `a${i}` });
    const before = await listed(key);
    expect(await refusal(await call("/v1/agents", { body: { id: "one_more" }, token: key }))).toMatchObject({
      status: 422,
      code: "LimitExceeded",
      details: { resource: "agents", limit: MAX_AGENTS },
    });
    expect(await listed(key)).toEqual(before);
    expect((await call("/v1/agents/a0", { method: "DELETE", token: key })).status).toBe(204);
    await created(key, { id: "one_more" });
  });

  it(`an agent has at most ${MAX_AGENT_VERSIONS} versions`, { timeout: 300_000 }, async () => {
    const { key } = await newTenant("agentversions");
    await created(key, { id: "busy" });
    for (let version = 2; version <= MAX_AGENT_VERSIONS; version++) {
      const response = await call("/v1/agents/busy", { method: "PATCH", body: { metadata: { v: String(version) } }, token: key });
      if (response.status !== 200) throw new Error(`patch ${version}: ${response.status} ${await response.text()}`);
    }
    const before = await latest(key, "busy");
    expect(before).toMatchObject({ version: MAX_AGENT_VERSIONS });
    expect(await refusal(await call("/v1/agents/busy", { method: "PATCH", body: { name: "too many" }, token: key }))).toMatchObject({
      status: 422,
      code: "LimitExceeded",
      details: { resource: "agent_versions", limit: MAX_AGENT_VERSIONS, agentId: "busy" },
    });
    expect(await latest(key, "busy")).toEqual(before);
  });

  it(`a version is at most ${MAX_AGENT_VERSION_BYTES} bytes of JSON, at creation and after a patch`, async () => {
    const { key } = await newTenant("agentbytes");
    const big = { settings: { systemPrompt: "x".repeat(150_000) }, resources: { skills: { a: { content: "y".repeat(120_000) } }, promptTemplates: {} } };
    const refused = await refusal(await call("/v1/agents", { body: { id: "big", ...big }, token: key }));
    expect(refused).toMatchObject({ status: 422, code: "LimitExceeded", details: { resource: "agent_version_bytes", limit: MAX_AGENT_VERSION_BYTES } });
    expect(await listed(key)).toEqual({ items: [], nextCursor: null });

    await created(key, { id: "grows", settings: big.settings });
    const before = await latest(key, "grows");
    expect(await refusal(await call("/v1/agents/grows", { method: "PATCH", body: { resources: big.resources }, token: key }))).toMatchObject({
      status: 422,
      code: "LimitExceeded",
      details: { resource: "agent_version_bytes" },
    });
    expect(await latest(key, "grows")).toEqual(before);
  });

  it(`a page of agents ends before ${AGENT_PAGE_BYTES_MAX} bytes of JSON, with a cursor to the rest`, { timeout: 60_000 }, async () => {
    const { key } = await newTenant("agentpagebytes");
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push((await created(key, { id: `big${String(i).padStart(2, "0")}`, settings: { systemPrompt: "p".repeat(200_000) } })).id);
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    do {
      const response = await call(`/v1/agents?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { token: key });
      const text = await response.text();
      const page: { items: Agent[]; nextCursor: string | null } = JSON.parse(text);
      sizes.push(text.length);
      seen.push(...page.items.map((agent) => agent.id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(ids);
    expect(sizes.length).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThan(AGENT_PAGE_BYTES_MAX + 64 * 1024);
  });

  it("metadata: bounded keys, key length and value length, also when a patch merges keys in", async () => {
    const { key } = await newTenant("agentmeta");
    const many = Object.fromEntries(Array.from({ length: MAX_METADATA_KEYS + 1 }, (_, i) => [`k${i}`, "v"]));
    // An array is not an object, though its indexes would pass as keys.
    for (const metadata of [many, { ["k".repeat(65)]: "v" }, { "": "v" }, { "a key": "v" }, { k: "v".repeat(513) }, { k: 1 }, [], ["v"]]) {
      expect(await refusal(await call("/v1/agents", { body: { metadata }, token: key }))).toMatchObject({ status: 400, code: "ValidationFailed" });
    }
    expect(await listed(key)).toEqual({ items: [], nextCursor: null });
    const full = Object.fromEntries(Array.from({ length: MAX_METADATA_KEYS }, (_, i) => [`k${i}`, "v".repeat(512)]));
    await created(key, { id: "full", metadata: full });
    const before = await latest(key, "full");
    for (const metadata of [[], ["v"]]) {
      expect(await refusal(await call("/v1/agents/full", { method: "PATCH", body: { metadata }, token: key }))).toMatchObject({ status: 400, code: "ValidationFailed", message: expect.stringMatching(/^metadata: metadata must be an object/) });
    }
    const merged = await refusal(await call("/v1/agents/full", { method: "PATCH", body: { metadata: { extra: "v" } }, token: key }));
    expect(merged).toMatchObject({ status: 400, code: "ValidationFailed", message: expect.stringMatching(/^metadata: /) });
    expect(await latest(key, "full")).toEqual(before);
  });
});

describe("agent checks (nothing written on refusal)", () => {
  const cases: [string, unknown, { status: number; code: string; details?: unknown; message?: unknown }][] = [
    ["an unknown model", { model: { provider: "scripted", modelId: "nope" } }, { status: 422, code: "UnknownModel", details: { provider: "scripted", modelId: "nope" } }],
    ["a provider the tenant has no key for", { model: { provider: "anthropic", modelId: "claude-sonnet-4-5" } }, { status: 422, code: "UnknownModel" }],
    ["an unknown default model", { settings: { defaultModel: { provider: "scripted", modelId: "nope" } } }, { status: 422, code: "UnknownModel" }],
    [
      "an http tool URL the egress policy refuses",
      { tools: { lookup: { kind: "http", description: "d", parameters: ARGS_SCHEMA, url: "https://169.254.169.254/latest" } } },
      { status: 400, code: "ValidationFailed", message: expect.stringMatching(/^tools\.lookup\.url: /), details: { field: "url", tool: "lookup", reason: "unsafe_address" } },
    ],
    ["plain http to a public host", { tools: { lookup: { kind: "http", description: "d", parameters: ARGS_SCHEMA, url: "http://tools.example.com/x" } } }, { status: 400, code: "ValidationFailed" }],
    ["parameters that do not compile", { tools: { ask: { kind: "client", description: "d", parameters: { type: "object", properties: { a: { type: "nope" } } } } } }, { status: 400, code: "ValidationFailed", message: expect.stringMatching(/^tools\.ask\.parameters: /) }],
    ["an unknown builtin tool", { tools: { teleport: { kind: "builtin" } } }, { status: 422, code: "UnknownTool", details: { tools: ["teleport"] } }],
    ["activeTools naming a tool the agent does not define", { tools: { current_time: { kind: "builtin" } }, activeTools: ["current_time", "search"] }, { status: 422, code: "UnknownTool", details: { tools: ["search"] } }],
    ["activeTools naming an undefined builtin", { activeTools: ["current_time"] }, { status: 422, code: "UnknownTool", details: { tools: ["current_time"] } }],
    ["bad settings", { settings: { retry: { maxRetries: -1 } } }, { status: 400, code: "ValidationFailed", message: expect.stringMatching(/^settings\.retry\.maxRetries: /) }],
    ["an unknown setting", { settings: { temperature: 1 } }, { status: 400, code: "ValidationFailed" }],
    ["deferred answers on a model that cannot give them", { model: ECHO, settings: { streamOptions: { deferred: true } } }, { status: 422, code: "DeferredUnsupported" }],
    ["a tenant tool that does not exist", { tools: { lookup: { kind: "tenant", tool: "lookup" } } }, { status: 422, code: "UnknownTool", details: { tools: ["lookup"] } }],
    ["a tenant MCP server that does not exist", { mcpServers: ["docs"] }, { status: 422, code: "UnknownTool", details: { mcpServers: ["docs"] } }],
    ["an MCP server named twice", { mcpServers: ["docs", "docs"] }, { status: 400, code: "ValidationFailed" }],
    ["an unknown member", { colour: "blue" }, { status: 400, code: "ValidationFailed" }],
  ];

  it.each(cases)("POST refuses %s", async (_, body, expected) => {
    const { key } = await newTenant("agentcheck");
    expect(await refusal(await call("/v1/agents", { body, token: key }))).toMatchObject(expected);
    expect(await listed(key)).toEqual({ items: [], nextCursor: null });
  });

  it.each(cases.filter(([name]) => !name.startsWith("an unknown member")))("PATCH refuses %s", async (_, body, expected) => {
    const { key } = await newTenant("agentcheckp");
    await created(key, { id: "a", model: ECHO });
    const before = await latest(key, "a");
    expect(await refusal(await call("/v1/agents/a", { method: "PATCH", body, token: key }))).toMatchObject(expected);
    expect(await latest(key, "a")).toEqual(before);
    expect(await (await call("/v1/agents/a/versions", { token: key })).json()).toMatchObject({ items: [before] });
  });

  it("PATCH refuses a merge whose result is invalid (a tool patched into an incomplete one), naming the field", async () => {
    const { key } = await newTenant("agentcheckm");
    await created(key, { id: "a" });
    const response = await call("/v1/agents/a", { method: "PATCH", body: { tools: { lookup: { url: "https://tools.example.com/x" } } }, token: key });
    expect(await refusal(response)).toMatchObject({ status: 400, code: "ValidationFailed", message: expect.stringMatching(/^tools\.lookup/) });
    expect(await latest(key, "a")).toMatchObject({ version: 1 });
  });
});
