import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { TenantObject } from "../../durable-objects/tenant/tenant-object.ts";
import { sealSecret, secretBoxKey } from "../../secrets/secret-box.ts";
import { toolDefinition, toolSecretContext, type StoredToolDefinition } from "../../tools/definitions.ts";
import { tenantToolSecretContext } from "../../tools/tenant-copies.ts";
import { call, json, newTenant } from "./helpers.ts";
import { ARGS_SCHEMA } from "./tool-api-helpers.ts";

// docs/security.md: changing SECRETS_KEY makes every sealed secret unreadable, and tools, MCP
// servers and webhook endpoints are registered again. A request that must copy such a secret
// answered 500: forking a session that holds the tool, creating a session from an agent that pins
// the tenant tool. They answer 409 SecretUnreadable naming what to register again, and write
// nothing; a PUT of the tool then gives it a new secret (it keeps only one that opens). A seal from before a rotation is made here as a rotation leaves it: with another
// SECRETS_KEY, under the right purpose and context.

const PREVIOUS_SECRETS_KEY = "the-previous-secrets-key-before-the-rotation";
const HTTP_TOOL = { kind: "http", description: "Looks up an order", parameters: ARGS_SCHEMA, url: "https://tools.example.com/lookup" };

async function previousSeal(context: string): Promise<string> {
  return sealSecret(await secretBoxKey(PREVIOUS_SECRETS_KEY, "tool-secret"), "tsk_sealed_before_the_rotation", context);
}

describe("a tool secret sealed before a SECRETS_KEY rotation", () => {
  it("forking the session that holds it is 409 SecretUnreadable naming the tool, and writes nothing; a PUT gives the tool a new secret", async () => {
    const tenant = await newTenant("rv_rot_fork");
    expect((await call("/v1/sessions", { token: tenant.key, body: { id: "src", tools: { lookup: HTTP_TOOL } } })).status).toBe(201);
    await runInDurableObject(env.SESSIONS.getByName(`${tenant.tenantId}:src`), async (instance: SessionObject) => {
      const session = instance.session();
      const stored = session.getValue(toolDefinition("lookup"))?.value;
      if (!stored) throw new Error("no stored tool");
      await session.setValue(toolDefinition("lookup"), { ...stored, sealedSecret: await previousSeal(toolSecretContext("src", "lookup")) });
    });

    const fork = await call("/v1/sessions/src/fork", { token: tenant.key, body: { scope: "tree", id: "copy" } });
    expect(fork.status).toBe(409);
    expect(await fork.json()).toMatchObject({ error: { code: "SecretUnreadable", details: { tool: "lookup" } } });
    // Nothing was written: the id is free, and a session can be made under it.
    expect((await call("/v1/sessions/copy", { token: tenant.key })).status).toBe(404);

    // A PUT of the tool keeps a secret that opens; this one does not, so the PUT gives a new one.
    const put = await json<{ secret?: string }>(await call("/v1/sessions/src/tools/lookup", { method: "PUT", token: tenant.key, body: HTTP_TOOL }), 200);
    expect(put.secret).toMatch(/^tsk_/);
    const again = await json<{ secret?: string }>(await call("/v1/sessions/src/tools/lookup", { method: "PUT", token: tenant.key, body: HTTP_TOOL }), 200);
    expect(again.secret).toBeUndefined();
    expect((await call("/v1/sessions/src/fork", { token: tenant.key, body: { scope: "tree", id: "copy" } })).status).toBe(201);
  });

  it("creating a session from an agent that pins the tenant tool is 409 SecretUnreadable naming it, and writes nothing; a PUT of the tenant tool heals it", async () => {
    const tenant = await newTenant("rv_rot_agent");
    await json(await call("/v1/tools/lookup", { method: "PUT", token: tenant.key, body: HTTP_TOOL }), 201);
    await json(await call("/v1/agents", { token: tenant.key, body: { id: "shop", model: { provider: "scripted", modelId: "echo" }, tools: { lookup: { kind: "tenant", tool: "lookup" } } } }), 201);
    const sealed = await previousSeal(tenantToolSecretContext(tenant.tenantId, "lookup"));
    await runInDurableObject(env.TENANTS.getByName(tenant.tenantId), (_instance: TenantObject, state) => {
      const row = state.storage.sql.exec<{ definition: string }>("SELECT definition FROM tenant_tool_revisions WHERE kind = 'tool' AND name = 'lookup' AND revision = 1").one();
      const definition: StoredToolDefinition = JSON.parse(row.definition);
      state.storage.sql.exec("UPDATE tenant_tool_revisions SET definition = ? WHERE kind = 'tool' AND name = 'lookup' AND revision = 1", JSON.stringify({ ...definition, sealedSecret: sealed }));
    });

    const created = await call("/v1/sessions", { token: tenant.key, body: { id: "from-agent", agent: "shop" } });
    expect(created.status).toBe(409);
    expect(await created.json()).toMatchObject({ error: { code: "SecretUnreadable", details: { tenantTool: "lookup" } } });
    expect((await call("/v1/sessions/from-agent", { token: tenant.key })).status).toBe(404);

    // A PUT of the tenant tool gives a new secret (its revision 1's no longer opens); the agent's
    // next version pins that revision, and sessions are made from it again.
    const put = await json<{ secret?: string; revision: number }>(await call("/v1/tools/lookup", { method: "PUT", token: tenant.key, body: HTTP_TOOL }), 200);
    expect(put).toMatchObject({ revision: 2, secret: expect.stringMatching(/^tsk_/) });
    await json(await call("/v1/agents/shop", { method: "PATCH", token: tenant.key, body: { tools: { lookup: { kind: "tenant", tool: "lookup" } } } }), 200);
    expect((await call("/v1/sessions", { token: tenant.key, body: { id: "from-agent", agent: "shop" } })).status).toBe(201);
  });
});
