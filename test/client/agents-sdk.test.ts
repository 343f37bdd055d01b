import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../../client/index.ts";
import { newTenant } from "../api/helpers.ts";

// The SDK's agents against the real app in workerd: create (with an Idempotency-Key), list and
// page, read, version history, merge-patch updates and deletion.

describe("client SDK: agents", { timeout: 30_000 }, () => {
  it("creates, pages, reads, updates and deletes agents", async () => {
    const tenant = await newTenant("sdk_agents");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    const support = await client.agents.create(
      { id: "support", model: { provider: "scripted", modelId: "echo" }, tools: { current_time: { kind: "builtin" } }, activeTools: ["current_time"], metadata: { team: "support" } },
      { idempotencyKey: "sdk-agent-1" },
    );
    expect(support).toMatchObject({ id: "support", version: 1, activeTools: ["current_time"] });
    expect(await client.agents.create({ id: "support", model: { provider: "scripted", modelId: "echo" }, tools: { current_time: { kind: "builtin" } }, activeTools: ["current_time"], metadata: { team: "support" } }, { idempotencyKey: "sdk-agent-1" })).toEqual(support);
    const sales = await client.agents.create({ name: "Sales" });
    const triage = await client.agents.create({ name: "Triage" });

    const firstPage = await client.agents.list({ limit: 2 });
    expect(firstPage.items.map((agent) => agent.id)).toEqual(["support", sales.id]);
    expect(firstPage.nextCursor).not.toBeNull();
    const all = [];
    for await (const agent of client.agents.all({ limit: 1 })) all.push(agent.id);
    expect(all).toEqual(["support", sales.id, triage.id]);

    const second = await client.agents.update("support", { settings: { systemPrompt: "Be brief." }, metadata: { team: null } });
    expect(second).toMatchObject({ id: "support", version: 2, settings: { systemPrompt: "Be brief." } });
    // RFC 7396: removing the last key leaves an empty object (`"metadata": null` would remove it).
    expect(second.metadata).toEqual({});
    expect(await client.agents.get("support")).toEqual(second);
    expect(await client.agents.version("support", 1)).toEqual(support);
    expect((await client.agents.versions("support", { limit: 1 })).items).toEqual([support]);
    const versions = [];
    for await (const version of client.agents.allVersions("support", { limit: 1 })) versions.push(version.version);
    expect(versions).toEqual([1, 2]);

    await client.agents.delete("support");
    expect(isApiError(await client.agents.get("support").catch((error: unknown) => error), "AgentNotFound")).toBe(true);
    expect(isApiError(await client.agents.delete("support").catch((error: unknown) => error), "AgentNotFound")).toBe(true);
    expect(await client.agents.version("support", 2)).toMatchObject({ version: 2, deletedAt: expect.any(Number) });
    expect(isApiError(await client.agents.create({ activeTools: ["nope"] }).catch((error: unknown) => error), "UnknownTool")).toBe(true);
  });

  it("lists the sessions bound to an agent, or to one version of it", async () => {
    const tenant = await newTenant("sdk_agent_sessions");
    const client = createClient({ baseUrl: "http://api.test/", key: tenant.key, fetch: (input, init) => exports.default.fetch(input, init) });
    await client.agents.create({ id: "helper", model: { provider: "scripted", modelId: "echo" } });
    const first = await client.sessions.create({ agent: "helper" });
    await client.agents.update("helper", { settings: { systemPrompt: "Be brief." } });
    const second = await client.sessions.create({ agent: "helper" });
    await client.sessions.create({});
    const ids = async (agent: string) => (await client.sessions.list({ agent })).items.map((row) => [row.id, row.agent]);
    expect(await ids("helper")).toEqual([
      [first.id, { id: "helper", version: 1 }],
      [second.id, { id: "helper", version: 2 }],
    ]);
    expect(await ids("helper@2")).toEqual([[second.id, { id: "helper", version: 2 }]]);

    // Moving a session to another version, and a lane made later taking its configuration.
    const moved = await client.sessions.patch(first.id, { agent: "helper@2" });
    expect(moved).toMatchObject({ agent: { id: "helper", version: 2 }, settings: { systemPrompt: "Be brief." } });
    expect(await ids("helper@2")).toEqual([
      [first.id, { id: "helper", version: 2 }],
      [second.id, { id: "helper", version: 2 }],
    ]);
    expect(await client.prompt(first.id, "main", "hello", { wait: 10 })).toMatchObject({ state: "settled", result: { status: "completed", agent: { id: "helper", version: 2 } } });
  });
});
