import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { LaneExecutionInfo, LaneSnapshot, OperationResultRecord } from "../../schema/lane.ts";
import type { CreatedSession } from "../../schema/session.ts";
import type { ToolDefinitionView } from "../../schema/tools.ts";
import { call, errorCode, newTenant, json } from "./helpers.ts";
import { TOOL_CALL_CONTEXT_META_KEY } from "../../schema/tools.ts";
import { mcpScope } from "./mcp-helpers.ts";
import { ARGS_SCHEMA, settle, webhook } from "./tool-api-helpers.ts";

// Sessions bound to an agent version (issue 32 item 2, docs/agents.md) through the real Hono app:
// creation copies the version and configures lane `main` in one step; a move to another version
// is captured by each lane's next operation while a running one keeps the version it was accepted
// under (its record says which); lanes made later take the version's lane configuration; the
// tenant's index finds sessions by agent; a fork keeps the binding.

const SCRIPT = { provider: "scripted", modelId: "script" };

type Tenant = Awaited<ReturnType<typeof newTenant>>;

async function agentTenant(prefix: string, hookUrl: string): Promise<Tenant> {
  const tenant = await newTenant(prefix);
  await json(
    await call("/v1/agents", {
      token: tenant.key,
      body: {
        id: "support",
        model: SCRIPT,
        thinkingLevel: "low",
        settings: { systemPrompt: "You are support, version one." },
        resources: { skills: { refunds: { content: "How refunds work." } }, promptTemplates: {} },
        tools: {
          lookup: { kind: "http", description: "Looks up an order", parameters: ARGS_SCHEMA, url: hookUrl },
          ask_user: { kind: "client", description: "Asks the user", parameters: ARGS_SCHEMA },
          current_time: { kind: "builtin" },
        },
      },
    }),
    201,
  );
  return tenant;
}

const createFrom = async (tenant: Tenant, body: Record<string, unknown>): Promise<CreatedSession> => json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body }), 201);
const lane = async (tenant: Tenant, sid: string, name = "main"): Promise<LaneExecutionInfo> => json<LaneExecutionInfo>(await call(`/v1/sessions/${sid}/lanes/${name}`, { token: tenant.key }), 200);
const tools = async (tenant: Tenant, sid: string): Promise<ToolDefinitionView[]> => (await json<{ items: ToolDefinitionView[] }>(await call(`/v1/sessions/${sid}/tools`, { token: tenant.key }), 200)).items;

async function script(tenant: Tenant, sid: string, steps: ScriptStep[]): Promise<void> {
  await runInDurableObject(env.SESSIONS.getByName(`${tenant.tenantId}:${sid}`), (instance: SessionObject) => appendScriptSteps(instance.session(), steps));
}

async function promptOn(tenant: Tenant, sid: string, laneName = "main"): Promise<string> {
  const accepted = await json<{ operationId: string }>(await call(`/v1/sessions/${sid}/lanes/${laneName}/operations`, { token: tenant.key, body: { kind: "prompt", prompt: "go" } }), 202);
  return accepted.operationId;
}

const lanePath = (tenant: Tenant, sid: string, name = "main") => ({ key: tenant.key, lanePath: `/v1/sessions/${sid}/lanes/${name}` });

describe("sessions bound to an agent version", () => {
  it("creation copies the version (settings, resources, tools with a secret per session) and configures lane main", async () => {
    const hook = webhook("agent_bind");
    const tenant = await agentTenant("agent_bind", hook.hookUrl("echo"));
    const session = await createFrom(tenant, { agent: "support", metadata: { user: "u_1" } });
    expect(session.agent).toEqual({ id: "support", version: 1 });
    expect(session.settings.systemPrompt).toBe("You are support, version one.");
    expect(session.lanes.map((info) => info.name)).toEqual(["main"]);
    expect(Object.keys(session.toolSecrets ?? {})).toEqual(["lookup"]);
    expect((await lane(tenant, session.id)).configuration).toEqual({ model: SCRIPT, thinkingLevel: "low", activeToolNames: ["lookup", "ask_user", "current_time"] });
    expect((await tools(tenant, session.id)).map((tool) => [tool.name, tool.kind])).toEqual([
      ["ask_user", "client"],
      ["current_time", "builtin"],
      ["lookup", "http"],
    ]);
    const skill = await call(`/v1/sessions/${session.id}/lanes/main/operations`, { token: tenant.key, body: { kind: "skill", name: "refunds" } });
    expect(skill.status).toBe(202);

    // Another session from the same agent gets its own secret for the agent's own http tool.
    const other = await createFrom(tenant, { agent: "support@1" });
    expect(other.toolSecrets?.lookup).toMatch(/^tsk_/);
    expect(other.toolSecrets?.lookup).not.toBe(session.toolSecrets?.lookup);
  });

  it("fields given beside agent override the version's for that session", async () => {
    const tenant = await agentTenant("agent_override", "https://tools.example.com/lookup");
    const session = await createFrom(tenant, {
      agent: "support",
      settings: { systemPrompt: "Own prompt." },
      tools: { lookup: { kind: "client", description: "Asks instead", parameters: ARGS_SCHEMA } },
    });
    expect(session.settings.systemPrompt).toBe("Own prompt.");
    expect(session.toolSecrets).toBeUndefined();
    expect((await tools(tenant, session.id)).find((tool) => tool.name === "lookup")?.kind).toBe("client");
  });

  it("an unknown or deleted agent, or a version it does not have, creates nothing", async () => {
    const tenant = await agentTenant("agent_missing", "https://tools.example.com/lookup");
    for (const agent of ["nobody", "support@7"]) {
      const refused = await call("/v1/sessions", { token: tenant.key, body: { id: "s_refused", agent } });
      expect(refused.status).toBe(404);
      expect(await errorCode(refused)).toBe("AgentNotFound");
    }
    // Another tenant's agent of the same id is not this tenant's: isolation by the caller's key.
    const other = await newTenant("agent_missing_other");
    const foreign = await call("/v1/sessions", { token: other.key, body: { agent: "support" } });
    expect(await errorCode(foreign)).toBe("AgentNotFound");
    const bad = await call("/v1/sessions", { token: tenant.key, body: { agent: "support@0" } });
    expect(await errorCode(bad)).toBe("ValidationFailed");
    expect((await call("/v1/agents/support", { method: "DELETE", token: tenant.key })).status).toBe(204);
    const deleted = await call("/v1/sessions", { token: tenant.key, body: { id: "s_refused", agent: "support@1" } });
    expect(await errorCode(deleted)).toBe("AgentNotFound");
    expect((await call("/v1/sessions/s_refused", { token: tenant.key })).status).toBe(404);
  });

  it("a move is captured by each lane's next operation; the running one keeps the version it was accepted under", async () => {
    const hook = webhook("agent_move");
    const tenant = await agentTenant("agent_move", hook.hookUrl("echo"));
    const session = await createFrom(tenant, { agent: "support" });
    const lookupHint = (await tools(tenant, session.id)).find((tool) => tool.name === "lookup")?.secretHint;
    await json(
      await call("/v1/agents/support", {
        method: "PATCH",
        token: tenant.key,
        body: { thinkingLevel: "high", settings: { systemPrompt: "You are support, version two." }, tools: { current_time: null, extra: { kind: "http", description: "More", parameters: ARGS_SCHEMA, url: hook.hookUrl("extra") } } },
      }),
      200,
    );
    // A run waits on the client tool while the session moves.
    await script(tenant, session.id, [{ toolCalls: [{ name: "ask_user", arguments: { question: "which order?" } }] }, { text: "thanks" }, { text: "second run" }]);
    const running = await promptOn(tenant, session.id);
    const waiting = await clientCall(tenant, session.id);

    const moved = await json<CreatedSession>(await call(`/v1/sessions/${session.id}`, { method: "PATCH", token: tenant.key, body: { agent: "support@2" } }), 200);
    expect(moved.agent).toEqual({ id: "support", version: 2 });
    expect(moved.settings.systemPrompt).toBe("You are support, version two.");
    // Only the tool the new version brings gets a new secret; the one both define keeps its own.
    expect(Object.keys(moved.toolSecrets ?? {})).toEqual(["extra"]);
    const after = await tools(tenant, session.id);
    expect(after.map((tool) => tool.name)).toEqual(["ask_user", "extra", "lookup"]);
    expect(after.find((tool) => tool.name === "lookup")?.secretHint).toBe(lookupHint);
    expect((await lane(tenant, session.id)).configuration).toEqual({ model: SCRIPT, thinkingLevel: "high", activeToolNames: ["lookup", "ask_user", "extra"] });

    const posted = await call(`/v1/sessions/${session.id}/lanes/main/operations/${running}/tool-results/${waiting}`, { token: tenant.key, body: { content: [{ type: "text", text: "order 7" }] } });
    expect(posted.status).toBe(202);
    const first = await settle(lanePath(tenant, session.id), running);
    expect(first).toMatchObject({ status: "completed", agent: { id: "support", version: 1 } });
    const next: OperationResultRecord = await settle(lanePath(tenant, session.id), await promptOn(tenant, session.id));
    expect(next).toMatchObject({ status: "completed", agent: { id: "support", version: 2 } });

    // A lane made later takes the version's lane configuration, unless asked not to.
    expect((await json<LaneExecutionInfo>(await call(`/v1/sessions/${session.id}/lanes/side`, { method: "PUT", token: tenant.key }), 201)).tipId).toBeNull();
    expect((await lane(tenant, session.id, "side")).configuration.thinkingLevel).toBe("high");
    await json(await call(`/v1/sessions/${session.id}/lanes/plain`, { method: "PUT", token: tenant.key, body: { agent: false } }), 201);
    expect((await lane(tenant, session.id, "plain")).configuration).toMatchObject({ thinkingLevel: "off", activeToolNames: [] });
  });

  it("a move keeps the tools the session defined itself, and drops what only the old version brought", async () => {
    const tenant = await agentTenant("agent_move_own", "https://tools.example.com/lookup");
    const session = await createFrom(tenant, { agent: "support" });
    expect((await call(`/v1/sessions/${session.id}/tools/extra`, { method: "PUT", token: tenant.key, body: { kind: "client", description: "Mine", parameters: ARGS_SCHEMA } })).status).toBe(201);
    await json(
      await call("/v1/agents/support", {
        method: "PATCH",
        token: tenant.key,
        body: { tools: { ask_user: null, extra: { kind: "http", description: "The agent's", parameters: ARGS_SCHEMA, url: "https://tools.example.com/extra" } } },
      }),
      200,
    );
    const moved = await json<CreatedSession>(await call(`/v1/sessions/${session.id}`, { method: "PATCH", token: tenant.key, body: { agent: "support" } }), 200);
    expect(moved.agent).toEqual({ id: "support", version: 2 });
    // No secret for an http tool the session did not take.
    expect(moved.toolSecrets).toBeUndefined();
    expect((await tools(tenant, session.id)).map((tool) => [tool.name, tool.kind])).toEqual([
      ["current_time", "builtin"],
      ["extra", "client"],
      ["lookup", "http"],
    ]);
  });

  it("an http tool call names the agent version in its signed context", async () => {
    const hook = webhook("agent_ctx");
    const tenant = await agentTenant("agent_ctx", hook.hookUrl("echo"));
    const session = await createFrom(tenant, { agent: "support", metadata: { user: "u_9" } });
    await hook.trust("echo", session.toolSecrets?.lookup ?? "");
    await script(tenant, session.id, [{ toolCalls: [{ name: "lookup", arguments: { question: "where?" } }] }, { text: "done" }]);
    expect((await settle(lanePath(tenant, session.id), await promptOn(tenant, session.id))).status).toBe("completed");
    const [received] = await hook.received();
    expect(received?.signatureValid).toBe(true);
    const body = received?.body;
    if (typeof body !== "object") throw new Error("the webhook got no JSON body");
    expect(body.context).toMatchObject({ sessionId: session.id, agent: { id: "support", version: 1 }, metadata: { user: "u_9" } });
  });

  it("a tenant http tool called from two sessions signs with its one secret, and each request names its session; a fork keeps the copy", async () => {
    const hook = webhook("agent_tenant_tool");
    const tenant = await newTenant("agent_tenant_tool");
    const put = await json<{ secret: string; revision: number }>(
      await call("/v1/tools/lookup", { method: "PUT", token: tenant.key, body: { kind: "http", description: "Looks up an order", parameters: ARGS_SCHEMA, url: hook.hookUrl("shared") } }),
      201,
    );
    await hook.trust("shared", put.secret);
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "shop", model: SCRIPT, tools: { lookup: { kind: "tenant", tool: "lookup" } } } }), 201);
    const sessions: string[] = [];
    for (const user of ["u_a", "u_b"]) {
      const session = await createFrom(tenant, { agent: "shop", metadata: { user } });
      // A tenant tool's secret is the tenant's: no session answers one.
      expect(session.toolSecrets).toBeUndefined();
      await script(tenant, session.id, [{ toolCalls: [{ name: "lookup", arguments: { question: user } }] }, { text: "done" }]);
      expect((await settle(lanePath(tenant, session.id), await promptOn(tenant, session.id))).status).toBe("completed");
      sessions.push(session.id);
    }
    const fork = await json<CreatedSession>(await call(`/v1/sessions/${sessions[0]}/fork`, { token: tenant.key, body: { scope: "tree" } }), 201);
    expect(fork.agent).toEqual({ id: "shop", version: 1 });
    await script(tenant, fork.id, [{ toolCalls: [{ name: "lookup", arguments: { question: "fork" } }] }, { text: "done" }]);
    expect((await settle(lanePath(tenant, fork.id), await promptOn(tenant, fork.id))).status).toBe("completed");

    const received = await hook.received();
    expect(received.map((one) => one.signatureValid)).toEqual([true, true, true]);
    const contexts = received.map((one) => (typeof one.body === "object" ? one.body.context : undefined));
    expect(contexts.map((context) => [context?.sessionId, context?.metadata.user, context?.agent])).toEqual([
      [sessions[0], "u_a", { id: "shop", version: 1 }],
      [sessions[1], "u_b", { id: "shop", version: 1 }],
      [fork.id, "u_a", { id: "shop", version: 1 }],
    ]);
    // The agent's latest version names it: the tool cannot be deleted.
    const refused = await call("/v1/tools/lookup", { method: "DELETE", token: tenant.key });
    expect(refused.status).toBe(409);
    expect(await errorCode(refused)).toBe("ToolInUse");
  });

  it("a tenant MCP server's tools run in a session made from the agent, with the tenant's bearer token and the call's context", async () => {
    const tenant = await newTenant("agent_tenant_mcp");
    const scope = mcpScope("agent_tenant_mcp");
    await json(await call("/v1/mcp-servers/docs", { method: "PUT", token: tenant.key, body: { url: scope.url, prefix: "docs_", bearerToken: "tenant-mcp-token" } }), 201);
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "reader", model: SCRIPT, mcpServers: ["docs"], activeTools: ["docs_echo"] } }), 201);
    const session = await createFrom(tenant, { agent: "reader", metadata: { user: "u_m" } });
    expect((await lane(tenant, session.id)).configuration.activeToolNames).toEqual(["docs_echo"]);
    await script(tenant, session.id, [{ toolCalls: [{ name: "docs_echo", arguments: { text: "hi" } }] }, { text: "done" }]);
    expect((await settle(lanePath(tenant, session.id), await promptOn(tenant, session.id))).status).toBe("completed");
    const [request] = await scope.calls();
    expect(request?.authorization).toBe("Bearer tenant-mcp-token");
    expect(request?.meta).toMatchObject({ [TOOL_CALL_CONTEXT_META_KEY]: { sessionId: session.id, agent: { id: "reader", version: 1 }, metadata: { user: "u_m" } } });
  });

  it("the tenant's index finds sessions by agent and version; a fork keeps the binding", async () => {
    const tenant = await agentTenant("agent_search", "https://tools.example.com/lookup");
    const one = await createFrom(tenant, { id: "s_one", agent: "support" });
    await createFrom(tenant, { id: "s_plain" });
    await json(await call("/v1/agents/support", { method: "PATCH", token: tenant.key, body: { thinkingLevel: "medium" } }), 200);
    const two = await createFrom(tenant, { id: "s_two", agent: "support" });
    expect(two.agent).toEqual({ id: "support", version: 2 });
    const search = async (query: string) => (await json<{ items: { id: string; agent?: unknown }[] }>(await call(`/v1/sessions?${query}`, { token: tenant.key }), 200)).items;
    expect(await search("agent=support")).toEqual([
      expect.objectContaining({ id: "s_one", agent: { id: "support", version: 1 } }),
      expect.objectContaining({ id: "s_two", agent: { id: "support", version: 2 } }),
    ]);
    expect((await search("agent=support@2")).map((item) => item.id)).toEqual(["s_two"]);
    expect(await search("agent=nobody")).toEqual([]);
    expect((await search("")).find((item) => item.id === "s_plain")).not.toHaveProperty("agent");

    await json(await call(`/v1/sessions/${one.id}`, { method: "PATCH", token: tenant.key, body: { agent: "support" } }), 200);
    expect((await search("agent=support@2")).map((item) => item.id)).toEqual(["s_one", "s_two"]);

    const fork = await json<CreatedSession>(await call(`/v1/sessions/${one.id}/fork`, { token: tenant.key, body: { scope: "tree", id: "s_fork" } }), 201);
    expect(fork.agent).toEqual({ id: "support", version: 2 });
    expect((await tools(tenant, fork.id)).map((tool) => tool.name)).toEqual(["ask_user", "current_time", "lookup"]);
    expect((await search("agent=support@2")).map((item) => item.id)).toEqual(["s_one", "s_two", "s_fork"]);
  });

  it("a session bound to no agent refuses { agent: true } for a new lane", async () => {
    const tenant = await newTenant("agent_unbound");
    const session = await createFrom(tenant, {});
    const refused = await call(`/v1/sessions/${session.id}/lanes/main`, { method: "PUT", token: tenant.key, body: { agent: true } });
    expect(refused.status).toBe(409);
    expect(await errorCode(refused)).toBe("AgentNotBound");
    expect((await call(`/v1/sessions/${session.id}/lanes/main`, { token: tenant.key })).status).toBe(404);
  });
});

/** The waiting client call's id, from the lane snapshot (bounded polling). */
async function clientCall(tenant: Tenant, sid: string): Promise<string> {
  for (let i = 0; i < 400; i++) {
    const { snapshot } = await json<{ snapshot: LaneSnapshot }>(await call(`/v1/sessions/${sid}/lanes/main/snapshot`, { token: tenant.key }), 200);
    const row = snapshot.operation?.runningTools.find((candidate) => candidate.toolName === "ask_user");
    if (row) return row.toolCallId;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error("the client call never showed up in the snapshot");
}
