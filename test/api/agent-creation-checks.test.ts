import { describe, expect, it } from "vitest";
import { RESOURCE_LIMITS } from "../../schema/settings.ts";
import { call, errorCode, json, newTenant } from "./helpers.ts";

// A session created from an agent version is checked whole before anything is written, as a move
// to that version is:
// - docs/api-sessions.md "Resources": a session holds at most 100 skills and 100 templates, of at
//   most 4 MiB together. The request's resources are merged over the version's by name; each side
//   was bounded alone, so a creation made a session of 101 skills (which its own export could not
//   import again). Now 400 ValidationFailed.
// - docs/agents.md: a version whose default model the tenant can no longer use was 422 for a move,
//   201 for a creation (a session whose default model nobody can run). Now 422 UnknownModel.

const ECHO = { provider: "scripted", modelId: "echo" };
const ANTHROPIC = { provider: "anthropic", modelId: "claude-sonnet-4-5" };

describe("resources of a session created from an agent stay within the session's bound", () => {
  it("a creation whose own skills and the agent's together pass 100 is refused and creates nothing", async () => {
    const { key } = await newTenant("agc_res_bound");
    const skills = Object.fromEntries(Array.from({ length: RESOURCE_LIMITS.perKind }, (_, i) => [`agent_skill_${i}`, { content: `skill ${i}` }]));
    await json(await call("/v1/agents", { token: key, body: { id: "full", model: ECHO, resources: { skills, promptTemplates: {} } } }), 201);

    const response = await call("/v1/sessions", {
      token: key,
      body: { id: "s_over", agent: "full", resources: { skills: { own_skill: { content: "one more" } }, promptTemplates: {} } },
    });
    const text = await response.text();
    expect(response.status, text).toBe(400);
    expect((await call("/v1/sessions/s_over", { token: key })).status).toBe(404);
  });
});

describe("a creation from an agent checks the version's default model like a move does", () => {
  it("a version with a usable model but a default model the tenant can no longer use: creation is 422, nothing created", async () => {
    const tenant = await newTenant("agc_dm");
    expect((await call("/v1/providers/anthropic", { method: "PUT", token: tenant.key, body: { apiKey: "sk-ant-creation-test-key-1234" } })).status).toBeLessThan(300);
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "dm", model: ECHO, settings: { defaultModel: ANTHROPIC } } }), 201);
    expect((await call("/v1/providers/anthropic", { method: "DELETE", token: tenant.key })).status).toBe(204);

    // A move to this version is refused (agent-move-models.test.ts covers it) ...
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_plain" } }), 201);
    const moved = await call("/v1/sessions/s_plain", { method: "PATCH", token: tenant.key, body: { agent: "dm@1" } });
    expect(moved.status).toBe(422);
    expect(await errorCode(moved)).toBe("UnknownModel");

    // ... and so is a creation from it.
    const created = await call("/v1/sessions", { token: tenant.key, body: { id: "s_dm", agent: "dm@1" } });
    const text = await created.text();
    expect(created.status, text).toBe(422);
    expect(JSON.parse(text).error?.code).toBe("UnknownModel");
    expect((await call("/v1/sessions/s_dm", { token: tenant.key })).status).toBe(404);
  });
});
