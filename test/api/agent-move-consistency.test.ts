import { describe, expect, it } from "vitest";
import type { LaneExecutionInfo } from "../../schema/lane.ts";
import type { CreatedSession } from "../../schema/session.ts";
import { call, errorCode, newTenant, json } from "./helpers.ts";
import { expectError } from "./session-helpers.ts";
import { ARGS_SCHEMA } from "./tool-api-helpers.ts";

// Moving a session to another agent version (PATCH /v1/sessions/{sid} { agent }) leaves it as a
// session created from that version would be (docs/agents.md), within the same bounds, and a
// refused PATCH writes nothing.

const SCRIPT = { provider: "scripted", modelId: "script" };

const lane = async (key: string, sid: string, name = "main"): Promise<LaneExecutionInfo> => json<LaneExecutionInfo>(await call(`/v1/sessions/${sid}/lanes/${name}`, { token: key }), 200);

describe("moving a session to an agent version", () => {
  it("a PATCH refused 404 AgentNotFound leaves the session's name and metadata as they were", async () => {
    const tenant = await newTenant("mv_patch404");
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_mv1", name: "before", metadata: { plan: "pro" } } }), 201);
    const refused = await call("/v1/sessions/s_mv1", { method: "PATCH", token: tenant.key, body: { name: "after", metadata: { plan: "enterprise" }, agent: "no_such_agent" } });
    expect(refused.status).toBe(404);
    expect(await errorCode(refused)).toBe("AgentNotFound");
    const session = await json<CreatedSession>(await call("/v1/sessions/s_mv1", { token: tenant.key }), 200);
    const listed = await json<{ items: { id: string; name: string | null; metadata: Record<string, string> }[] }>(await call("/v1/sessions", { token: tenant.key }), 200);
    // Nothing written: the version is read before the first write.
    expect({ name: session.name, metadata: session.metadata }).toEqual({ name: "before", metadata: { plan: "pro" } });
    expect(listed.items[0]).toMatchObject({ name: "before", metadata: { plan: "pro" } });
  });

  it("a move keeps the 64-tool bound of a session", async () => {
    const tenant = await newTenant("mv_tools");
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "extra", tools: { current_time: { kind: "builtin" } } } }), 201);
    const tools = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`own_${i}`, { kind: "client", description: "mine", parameters: ARGS_SCHEMA }]));
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_mv2", tools } }), 201);
    const moved = await call("/v1/sessions/s_mv2", { method: "PATCH", token: tenant.key, body: { agent: "extra", name: "renamed", metadata: { plan: "pro" } } });
    const listed = await json<{ items: { name: string }[] }>(await call("/v1/sessions/s_mv2/tools", { token: tenant.key }), 200);
    expect({ status: moved.status, tools: listed.items.length }).toEqual({ status: 422, tools: 64 });
    // Refused whole: neither the name nor the metadata of the same PATCH was written.
    const session = await json<CreatedSession>(await call("/v1/sessions/s_mv2", { token: tenant.key }), 200);
    expect({ name: session.name, metadata: session.metadata, agent: session.agent }).toEqual({ name: null, metadata: {}, agent: undefined });
  });

  it("a moved lane runs with the version's thinking level, as a new session from that version does", async () => {
    const tenant = await newTenant("mv_think");
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "think", model: SCRIPT, thinkingLevel: "high" } }), 201);
    const first = await json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body: { agent: "think" } }), 201);
    // Version 2 removes the thinking level (the merge patch's null).
    await json(await call("/v1/agents/think", { method: "PATCH", token: tenant.key, body: { thinkingLevel: null } }), 200);
    const moved = await json<CreatedSession>(await call(`/v1/sessions/${first.id}`, { method: "PATCH", token: tenant.key, body: { agent: "think@2" } }), 200);
    expect(moved.agent).toEqual({ id: "think", version: 2 });
    const fresh = await json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body: { agent: "think@2" } }), 201);
    const freshLevel = (await lane(tenant.key, fresh.id)).configuration.thinkingLevel;
    const movedLevel = (await lane(tenant.key, first.id)).configuration.thinkingLevel;
    expect(freshLevel).toBe("off");
    // Version 2 names none: "off", as for a session created from it (not version 1's "high").
    expect(movedLevel).toBe(freshLevel);
  });

  it("a cursor holding a position no page ends at (non-finite, fractional, negative) is a 400 naming the cursor", async () => {
    const tenant = await newTenant("mv_cursor");
    // Tagged with the listing each is sent to, so the position alone is what is refused.
    const forged = (listing: string, position: string) => btoa(`["${listing}",${position},"x"]`).replace(/=+$/, "");
    for (const position of ["1e999", "-1e999", "1.5", "-5"]) {
      await expectError(await call(`/v1/sessions?cursor=${forged("session", position)}`, { token: tenant.key }), 400, "ValidationFailed");
      await expectError(await call(`/v1/sessions?order=desc&cursor=${forged("session", position)}`, { token: tenant.key }), 400, "ValidationFailed");
      await expectError(await call(`/v1/agents?cursor=${forged("agent", position)}`, { token: tenant.key }), 400, "ValidationFailed");
    }
    // The same cursors with a position a page can end at are taken: what was refused above was the position.
    expect((await call(`/v1/sessions?cursor=${forged("session", "5")}`, { token: tenant.key })).status).toBe(200);
    expect((await call(`/v1/agents?cursor=${forged("agent", "5")}`, { token: tenant.key })).status).toBe(200);
  });

  it("a version's default active tools are the same for a created session and a moved one", async () => {
    const tenant = await newTenant("mv_active");
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "act", model: SCRIPT, tools: { lookup: { kind: "client", description: "agent's", parameters: ARGS_SCHEMA }, current_time: { kind: "builtin" } } } }), 201);
    // The request defines its own `lookup` beside the agent (the request's wins by name).
    const created = await json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body: { agent: "act@1", tools: { lookup: { kind: "client", description: "mine", parameters: ARGS_SCHEMA } } } }), 201);
    const atCreation = (await lane(tenant.key, created.id)).configuration.activeToolNames;
    // A move to the very same version.
    await json(await call(`/v1/sessions/${created.id}`, { method: "PATCH", token: tenant.key, body: { agent: "act@1" } }), 200);
    const afterMove = (await lane(tenant.key, created.id)).configuration.activeToolNames;
    expect(afterMove).toEqual(atCreation);
  });
  it("a PATCH refused for its metadata (a 17th key) neither moves the session nor changes its settings or name", async () => {
    const tenant = await newTenant("mv_metabound");
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "bound", model: SCRIPT, settings: { systemPrompt: "from the agent" } } }), 201);
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, "v"]));
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_mv3", name: "before", metadata: sixteen, settings: { systemPrompt: "mine" } } }), 201);
    for (const body of [{ name: "after", metadata: { extra: "x" }, agent: "bound" }, { name: "after", metadata: { extra: "x" }, settings: { systemPrompt: "changed" } }]) {
      const refused = await call("/v1/sessions/s_mv3", { method: "PATCH", token: tenant.key, body });
      expect(refused.status).toBe(422);
      expect(await errorCode(refused)).toBe("LimitExceeded");
    }
    const session = await json<CreatedSession>(await call("/v1/sessions/s_mv3", { token: tenant.key }), 200);
    expect({ name: session.name, agent: session.agent, metadata: session.metadata, systemPrompt: session.settings.systemPrompt }).toEqual({ name: "before", agent: undefined, metadata: sixteen, systemPrompt: "mine" });
  });

  it("a move with settings applies them over the version's in the same step", async () => {
    const tenant = await newTenant("mv_settings");
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "withsettings", model: SCRIPT, settings: { systemPrompt: "from the agent", steeringMode: "one-at-a-time" } } }), 201);
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_mv4" } }), 201);
    await json(await call("/v1/sessions/s_mv4", { method: "PATCH", token: tenant.key, body: { agent: "withsettings", settings: { systemPrompt: "the session's own" } } }), 200);
    const { settings } = await json<CreatedSession>(await call("/v1/sessions/s_mv4", { token: tenant.key }), 200);
    expect(settings).toMatchObject({ systemPrompt: "the session's own", steeringMode: "one-at-a-time" });
  });
  it("a move to a version whose model the tenant can no longer use is 422 UnknownModel, and the session stays where it was", async () => {
    const tenant = await newTenant("mv_model");
    expect((await call("/v1/providers/anthropic", { method: "PUT", token: tenant.key, body: { apiKey: "sk-ant-move-test-key-1234" } })).status).toBeLessThan(300);
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "claude", model: { provider: "anthropic", modelId: "claude-sonnet-4-5" } } }), 201);
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_mv5", name: "before" } }), 201);
    expect((await call("/v1/providers/anthropic", { method: "DELETE", token: tenant.key })).status).toBe(204);
    const refused = await call("/v1/sessions/s_mv5", { method: "PATCH", token: tenant.key, body: { agent: "claude", name: "after" } });
    expect(refused.status).toBe(422);
    expect(await errorCode(refused)).toBe("UnknownModel");
    const session = await json<CreatedSession>(await call("/v1/sessions/s_mv5", { token: tenant.key }), 200);
    expect({ name: session.name, agent: session.agent }).toEqual({ name: "before", agent: undefined });
  });
});
