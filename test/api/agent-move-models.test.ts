import { describe, expect, it } from "vitest";
import type { CreatedSession } from "../../schema/session.ts";
import { call, newTenant, json } from "./helpers.ts";

// Moving a session to an agent version checks the version's models as creating a session from it
// does (docs/agents.md): a model the tenant can no longer use is 422 before anything is written.

const ANTHROPIC = { provider: "anthropic", modelId: "claude-sonnet-4-5" };

describe("agent moves and the tenant's models", () => {
  it("a move to a version whose default model the tenant can no longer use is 422 UnknownModel, as a creation from it is", async () => {
    const tenant = await newTenant("rv_ag_dflt");
    expect((await call("/v1/providers/anthropic", { method: "PUT", token: tenant.key, body: { apiKey: "sk-ant-review-test-key-1234" } })).status).toBeLessThan(300);
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "dflt", settings: { defaultModel: ANTHROPIC } } }), 201);
    await json(await call("/v1/sessions", { token: tenant.key, body: { id: "s_dflt", name: "before" } }), 201);
    expect((await call("/v1/providers/anthropic", { method: "DELETE", token: tenant.key })).status).toBe(204);
    // A creation from the version is refused: its default model cannot be used now.
    const created = await call("/v1/sessions", { token: tenant.key, body: { id: "s_dflt2", agent: "dflt" } });
    expect(created.status).toBe(422);
    // A move to the same version must be refused the same way, before anything is written.
    const moved = await call("/v1/sessions/s_dflt", { method: "PATCH", token: tenant.key, body: { agent: "dflt", name: "after" } });
    const session = await json<CreatedSession>(await call("/v1/sessions/s_dflt", { token: tenant.key }), 200);
    expect({ status: moved.status, agent: session.agent, name: session.name, defaultModel: session.settings.defaultModel ?? null }).toEqual({
      status: 422,
      agent: undefined,
      name: "before",
      defaultModel: null,
    });
  });
});
