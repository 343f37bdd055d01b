import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { CreatedSession } from "../../schema/session.ts";
import { call, json, newTenant } from "./helpers.ts";
import { ARGS_SCHEMA, settle, webhook } from "./tool-api-helpers.ts";

// docs/agents.md says an http tool an agent defines itself "is stored without a
// signing secret: each session that gets the tool has its own secret, made for that session", and
// that a move to a version that defines an http tool the old one did not answers its secret in
// `toolSecrets`. A tenant tool ({ kind: "tenant" }) is another thing: one secret the whole tenant
// shares. When version 1 names a tenant tool and version 2 defines its own http tool under the same
// name, the moved session kept the tenant tool's shared secret for the new tool: a request signed
// with it, received by the new endpoint, verifies at the tenant tool's own endpoint too (same
// secret, fresh timestamp), so the new endpoint could replay it there. It now gets a secret of its
// own, as a session created from version 2 does.

const SCRIPT = { provider: "scripted", modelId: "script" };

describe("agent move from a tenant tool to the version's own http tool of the same name", () => {
  it("answers a new per-session secret in toolSecrets, and the new endpoint's calls verify with it", async () => {
    const hook = webhook("rv_move_secret");
    const tenant = await newTenant("rv_move_secret");
    const shared = await json<{ secret: string }>(
      await call("/v1/tools/lookup", { method: "PUT", token: tenant.key, body: { kind: "http", description: "The tenant's lookup", parameters: ARGS_SCHEMA, url: hook.hookUrl("tenant") } }),
      201,
    );
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "shop", model: SCRIPT, tools: { lookup: { kind: "tenant", tool: "lookup" } } } }), 201);
    const session = await json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body: { agent: "shop" } }), 201);
    expect(session.toolSecrets).toBeUndefined();

    // Version 2 defines its own http tool `lookup`, at another endpoint.
    await json(
      await call("/v1/agents/shop", {
        method: "PATCH",
        token: tenant.key,
        // A JSON Merge Patch: the tenant reference's `tool` is removed with null.
        body: { tools: { lookup: { kind: "http", tool: null, description: "The agent's own lookup", parameters: ARGS_SCHEMA, url: hook.hookUrl("own") } } },
      }),
      200,
    );
    // A session created from version 2 gets the tool with a secret made for it (the control).
    const fresh = await json<CreatedSession>(await call("/v1/sessions", { token: tenant.key, body: { agent: "shop@2" } }), 201);
    expect(fresh.toolSecrets?.lookup).toMatch(/^tsk_/);

    const moved = await json<CreatedSession>(await call(`/v1/sessions/${session.id}`, { method: "PATCH", token: tenant.key, body: { agent: "shop@2" } }), 200);
    expect(moved.agent).toEqual({ id: "shop", version: 2 });

    // What the new endpoint's calls are signed with, as the session holds it.
    await runInDurableObject(env.SESSIONS.getByName(`${tenant.tenantId}:${session.id}`), (instance: SessionObject) =>
      appendScriptSteps(instance.session(), [{ toolCalls: [{ name: "lookup", arguments: { question: "where?" } }] }, { text: "done" }]),
    );
    await hook.trust("own", shared.secret);
    const accepted = await json<{ operationId: string }>(await call(`/v1/sessions/${session.id}/lanes/main/operations`, { token: tenant.key, body: { kind: "prompt", prompt: "go" } }), 202);
    expect((await settle({ key: tenant.key, lanePath: `/v1/sessions/${session.id}/lanes/main` }, accepted.operationId)).status).toBe("completed");
    const [received] = await hook.received();
    expect(received?.behaviour).toBe("own");
    const signedWithTenantSecret = received?.signatureValid === true;

    // The tool the session took anew is answered with a secret of its own, and its endpoint's calls
    // are not signed with the tenant tool's shared secret.
    expect({ toolSecrets: moved.toolSecrets, signedWithTenantSecret }).toEqual({ toolSecrets: { lookup: expect.stringMatching(/^tsk_/) }, signedWithTenantSecret: false });
  });
});
