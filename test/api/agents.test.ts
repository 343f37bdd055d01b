import { describe, expect, it } from "vitest";
import type { Agent } from "../../schema/agents.ts";
import { call, errorCode, newTenant, json } from "./helpers.ts";
import { ARGS_SCHEMA } from "./tool-api-helpers.ts";

// Agents (docs/agents.md) through the real Hono app: versions, JSON Merge Patch, deletion, paging,
// validation before anything is written, tenant isolation and Idempotency-Key replay. Bounds are in
// agents-bounds.test.ts.

const ECHO = { provider: "scripted", modelId: "echo" };
const HTTP_TOOL = { kind: "http", description: "Looks up an order", parameters: ARGS_SCHEMA, url: "https://tools.example.com/lookup" };

const create = async (key: string, body: unknown): Promise<Agent> => json<Agent>(await call("/v1/agents", { body, token: key }), 201);
const patch = async (key: string, id: string, body: unknown): Promise<Agent> => json<Agent>(await call(`/v1/agents/${id}`, { method: "PATCH", body, token: key }), 200);
const list = async (key: string, query = ""): Promise<{ items: Agent[]; nextCursor: string | null }> => json(await call(`/v1/agents${query}`, { token: key }), 200);

describe("agents", () => {
  it("creates, lists, reads, versions, patches and deletes an agent", async () => {
    const { key } = await newTenant("agents");
    const definition = {
      name: "Support",
      description: "Answers support questions",
      model: ECHO,
      thinkingLevel: "low",
      settings: { systemPrompt: "Be brief.", retry: { maxRetries: 2 } },
      resources: { skills: { refunds: { content: "How refunds work." } }, promptTemplates: {} },
      tools: { lookup: HTTP_TOOL, current_time: { kind: "builtin" } },
      activeTools: ["lookup", "current_time"],
      metadata: { team: "support", tier: "gold" },
    };
    const first = await create(key, { id: "support", ...definition });
    expect(first).toEqual({ id: "support", version: 1, createdAt: expect.any(Number), ...definition });
    // An http tool is stored without a secret: nothing secret is shown or kept.
    expect(JSON.stringify(first)).not.toMatch(/secret|tsk_/);

    expect(await json(await call("/v1/agents/support", { token: key }), 200)).toEqual(first);
    expect(await list(key)).toEqual({ items: [first], nextCursor: null });

    const second = await patch(key, "support", { description: null, settings: { systemPrompt: "Be very brief." }, metadata: { tier: null, region: "eu" } });
    expect(second).toEqual({
      id: "support",
      version: 2,
      createdAt: first.createdAt,
      updatedAt: expect.any(Number),
      ...definition,
      description: undefined,
      settings: { systemPrompt: "Be very brief.", retry: { maxRetries: 2 } },
      metadata: { team: "support", region: "eu" },
    });
    expect(second).not.toHaveProperty("description");
    expect(await json(await call("/v1/agents/support", { token: key }), 200)).toEqual(second);
    expect(await list(key)).toEqual({ items: [second], nextCursor: null });

    // Old versions are immutable: version 1 reads as it was created.
    expect(await json(await call("/v1/agents/support/versions/1", { token: key }), 200)).toEqual(first);
    expect(await json(await call("/v1/agents/support/versions", { token: key }), 200)).toEqual({ items: [first, second], nextCursor: null });
    const missing = await call("/v1/agents/support/versions/3", { token: key });
    expect({ status: missing.status, body: await missing.json() }).toMatchObject({ status: 404, body: { error: { code: "AgentNotFound", details: { agentId: "support", version: 3 } } } });

    expect((await call("/v1/agents/support", { method: "DELETE", token: key })).status).toBe(204);
    const gone = await call("/v1/agents/support", { token: key });
    expect({ status: gone.status, code: await errorCode(gone) }).toEqual({ status: 404, code: "AgentNotFound" });
    expect(await list(key)).toEqual({ items: [], nextCursor: null });
    // Its versions stay readable, marked deleted.
    const versions = await json<{ items: Agent[] }>(await call("/v1/agents/support/versions", { token: key }), 200);
    expect(versions.items.map((agent) => [agent.version, agent.deletedAt !== undefined])).toEqual([[1, true], [2, true]]);
    expect(await json(await call("/v1/agents/support/versions/2", { token: key }), 200)).toEqual({ ...second, deletedAt: expect.any(Number) });
    // Deleting twice, patching or re-creating a deleted agent: refused.
    const again = await call("/v1/agents/support", { method: "DELETE", token: key });
    expect({ status: again.status, code: await errorCode(again) }).toEqual({ status: 404, code: "AgentNotFound" });
    const patched = await call("/v1/agents/support", { method: "PATCH", body: { name: "x" }, token: key });
    expect({ status: patched.status, code: await errorCode(patched) }).toEqual({ status: 404, code: "AgentNotFound" });
    const recreated = await call("/v1/agents", { body: { id: "support" }, token: key });
    expect({ status: recreated.status, body: await recreated.json() }).toMatchObject({ status: 409, body: { error: { code: "AgentExists", details: { agentId: "support", deleted: true } } } });
  });

  it("generates ids, refuses an id in use, and accepts an empty body", async () => {
    const { key } = await newTenant("agentid");
    const empty = await json<Agent>(await call("/v1/agents", { method: "POST", token: key }), 201);
    expect(empty).toEqual({ id: expect.stringMatching(/^ag_[0-9a-f]{32}$/), version: 1, createdAt: expect.any(Number) });
    const other = await create(key, { name: "second" });
    expect(other.id).not.toBe(empty.id);
    const taken = await call("/v1/agents", { body: { id: empty.id, name: "again" }, token: key });
    expect({ status: taken.status, body: await taken.json() }).toMatchObject({ status: 409, body: { error: { code: "AgentExists", details: { agentId: empty.id, deleted: false } } } });
    expect((await list(key)).items.map((agent) => agent.id)).toEqual([empty.id, other.id]);
  });

  it("merges a patch as RFC 7396: nested objects merge, null removes, arrays are replaced", async () => {
    const { key } = await newTenant("agentmerge");
    await create(key, {
      id: "a",
      model: ECHO,
      settings: { compaction: { enabled: false, keepRecentTokens: 100 }, streamOptions: { headers: { "x-a": "1", "x-b": "2" } } },
      resources: { skills: { one: { description: "first", content: "1" }, two: { content: "2" } }, promptTemplates: { t: { content: "T $1" } } },
      tools: { lookup: HTTP_TOOL, current_time: { kind: "builtin" } },
      activeTools: ["lookup"],
    });
    const next = await patch(key, "a", {
      model: null,
      settings: { compaction: { keepRecentTokens: null, reserveTokens: 10 }, streamOptions: { headers: { "x-a": null, "x-c": "3" } } },
      resources: { skills: { one: { description: null }, two: null } },
      tools: { lookup: { url: "https://tools.example.com/v2/lookup", timeoutMs: 5000 }, current_time: null },
      activeTools: ["lookup"],
    });
    expect(next).toEqual({
      id: "a",
      version: 2,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
      settings: { compaction: { enabled: false, reserveTokens: 10 }, streamOptions: { headers: { "x-b": "2", "x-c": "3" } } },
      resources: { skills: { one: { content: "1" } }, promptTemplates: { t: { content: "T $1" } } },
      tools: { lookup: { ...HTTP_TOOL, url: "https://tools.example.com/v2/lookup", timeoutMs: 5000 } },
      activeTools: ["lookup"],
    });
    // An empty patch still makes a version (identical to the one before).
    const same = await patch(key, "a", {});
    expect(same).toEqual({ ...next, version: 3, updatedAt: expect.any(Number) });
  });

  it("pages agents and versions with no gaps and no repeats", async () => {
    const { key } = await newTenant("agentpage");
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await create(key, { id: `agent_${i}`, metadata: { n: String(i) } })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { items: Agent[]; nextCursor: string | null } = await list(key, `?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      seen.push(...page.items.map((agent) => agent.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null);
    expect({ seen, pages }).toEqual({ seen: ids, pages: 3 });

    for (let i = 0; i < 4; i++) await patch(key, "agent_0", { metadata: { n: `v${i + 2}` } });
    const versions: number[] = [];
    cursor = null;
    do {
      const query: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page: { items: Agent[]; nextCursor: string | null } = await json(await call(`/v1/agents/agent_0/versions${query}`, { token: key }), 200);
      versions.push(...page.items.map((agent) => agent.version));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(versions).toEqual([1, 2, 3, 4, 5]);
    const bad = await call("/v1/agents?cursor=nope", { token: key });
    expect({ status: bad.status, code: await errorCode(bad) }).toEqual({ status: 400, code: "ValidationFailed" });
  });

  it("concurrent PATCHes each make a version; none is lost", async () => {
    const { key } = await newTenant("agentrace");
    await create(key, { id: "shared" });
    await Promise.all(Array.from({ length: 6 }, (_, i) => patch(key, "shared", { metadata: { [`k${i}`]: String(i) } })));
    const latest = await json<Agent>(await call("/v1/agents/shared", { token: key }), 200);
    expect(latest.version).toBe(7);
    expect(latest.metadata).toEqual({ k0: "0", k1: "1", k2: "2", k3: "3", k4: "4", k5: "5" });
  });

  it("another tenant sees none of them: 404 on every route, an empty list", async () => {
    const owner = await newTenant("agentowner");
    const other = await newTenant("agentother");
    await create(owner.key, { id: "private", name: "mine" });
    expect(await list(other.key)).toEqual({ items: [], nextCursor: null });
    const reads: [string, string, unknown?][] = [
      ["GET", "/v1/agents/private"],
      ["GET", "/v1/agents/private/versions"],
      ["GET", "/v1/agents/private/versions/1"],
      ["PATCH", "/v1/agents/private", { name: "theirs" }],
      ["DELETE", "/v1/agents/private"],
    ];
    for (const [method, path, body] of reads) {
      const response = await call(path, { method, token: other.key, ...(body !== undefined && { body }) });
      expect({ method, path, status: response.status, code: await errorCode(response) }).toEqual({ method, path, status: 404, code: "AgentNotFound" });
    }
    // The other tenant may use the same id for an agent of its own.
    await create(other.key, { id: "private", name: "theirs" });
    expect(await json(await call("/v1/agents/private", { token: owner.key }), 200)).toMatchObject({ name: "mine", version: 1 });
  });

  it("replays a POST with the same Idempotency-Key; another body with that key is refused", async () => {
    const { key } = await newTenant("agentidem");
    const request = { body: { name: "once", tools: { lookup: HTTP_TOOL } }, token: key, headers: { "idempotency-key": "agent-create-1" } };
    const first = await call("/v1/agents", request);
    const firstBody = await json<Agent>(first, 201);
    const replay = await call("/v1/agents", request);
    expect({ status: replay.status, replayed: replay.headers.get("idempotency-replayed"), body: await replay.json() }).toEqual({ status: 201, replayed: "true", body: firstBody });
    const conflict = await call("/v1/agents", { ...request, body: { name: "twice" } });
    expect({ status: conflict.status, code: await errorCode(conflict) }).toEqual({ status: 422, code: "IdempotencyConflict" });
    expect((await list(key)).items.map((agent) => agent.id)).toEqual([firstBody.id]);
  });
});
