import { Hono } from "hono";
import {
  AgentDefinitionSchema,
  AgentIdSchema,
  AgentVersionParamSchema,
  CreateAgentSchema,
  PatchAgentSchema,
  unpinnedDefinition,
  type Agent,
  type AgentDefinition,
  type PatchAgent,
} from "../../schema/agents.ts";
import { PAGE_LIMIT_DEFAULT, PageQuerySchema } from "../../schema/api.ts";
import { applyMergePatch } from "../../schema/merge-patch.ts";
import { toWire } from "../../schema/wire.ts";
import { assertUsableAgent } from "../agent-check.ts";
import { tenantStub, type AppContext, type AppEnv } from "../env.ts";
import { fail, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { idempotent, keyDerivedToken, newId } from "../middleware/idempotency.ts";
import { jsonBody, pathParam, queryParams, validate } from "../validate.ts";

/** A PATCH merges again over the newer version when another PATCH made one first; this many times at most. */
const PATCH_ATTEMPTS = 16;

/**
 * The tenant's agents (docs/agents.md): versioned definitions kept by the TenantObject
 * (tenant/agents.ts). Every definition is validated and checked here (agent-check.ts) before the
 * object is asked to store it. Mounted at /v1 beside other sub-apps, so authentication is per route.
 */
export const agentRoutes = new Hono<AppEnv>()
  // Idempotency-Key (D15), remembered by the tenant's object.
  .post("/agents", requireTenant, idempotent((c) => tenantStub(c.env, c.get("caller").tenantId)), async (c) => {
    const { tenantId } = c.get("caller");
    const { id, ...definition } = await jsonBody(c, CreateAgentSchema);
    await assertUsableAgent(c.env, tenantId, definition);
    // With an Idempotency-Key and no id, the id derives from the claimed key: a retry after a
    // failure part-way (the agent stored, the answer lost) names the same agent (409 AgentExists)
    // instead of creating a second one.
    const agentId = id ?? newId("ag_", 32, await keyDerivedToken(c));
    return c.json(replyValue(await tenantStub(c.env, tenantId).createAgent(agentId, toWire(definition))), 201);
  })
  .get("/agents", requireTenant, async (c) => {
    const { limit, cursor } = queryParams(c, PageQuerySchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).listAgents(limit ?? PAGE_LIMIT_DEFAULT, cursor)));
  })
  .get("/agents/:id", requireTenant, async (c) => {
    const id = pathParam(c, "id", AgentIdSchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).getAgent(id)));
  })
  .get("/agents/:id/versions", requireTenant, async (c) => {
    const id = pathParam(c, "id", AgentIdSchema);
    const { limit, cursor } = queryParams(c, PageQuerySchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).listAgentVersions(id, limit ?? PAGE_LIMIT_DEFAULT, cursor)));
  })
  .get("/agents/:id/versions/:version", requireTenant, async (c) => {
    const id = pathParam(c, "id", AgentIdSchema);
    const version = pathParam(c, "version", AgentVersionParamSchema);
    return c.json(replyValue(await tenantStub(c.env, c.get("caller").tenantId).getAgentVersion(id, version)));
  })
  // A JSON Merge Patch over the latest version → the next version (200).
  .patch("/agents/:id", requireTenant, async (c) => {
    const id = pathParam(c, "id", AgentIdSchema);
    const patch = await jsonBody(c, PatchAgentSchema);
    return c.json(await appendMerged(c, id, patch));
  })
  // Leaves the listing and `GET /v1/agents/{id}`; its versions stay readable. A second delete is 404.
  .delete("/agents/:id", requireTenant, async (c) => {
    const id = pathParam(c, "id", AgentIdSchema);
    replyValue(await tenantStub(c.env, c.get("caller").tenantId).deleteAgent(id));
    return c.body(null, 204);
  });

/**
 * Merges `patch` over the latest version, checks the result as a creation is checked, and stores
 * it as the next version, provided no other version was made meanwhile (the object compares); when
 * one was, the patch is merged again over that one, so concurrent PATCHes each land, none lost.
 */
async function appendMerged(c: AppContext, agentId: string, patch: PatchAgent): Promise<Agent> {
  const { tenantId } = c.get("caller");
  const tenant = tenantStub(c.env, tenantId);
  for (let attempt = 0; attempt < PATCH_ATTEMPTS; attempt++) {
    const { id: _id, version, createdAt: _createdAt, updatedAt: _updatedAt, deletedAt: _deletedAt, ...latest } = replyValue(await tenant.getAgent(agentId));
    // Merged over the names, not the pinned revisions: the new version pins what is current now.
    const merged: AgentDefinition = validate(AgentDefinitionSchema, applyMergePatch(unpinnedDefinition(latest), patch));
    await assertUsableAgent(c.env, tenantId, merged);
    const result = replyValue(await tenant.appendAgentVersion(agentId, version, toWire(merged)));
    if ("agent" in result) return result.agent;
  }
  throw fail("Overloaded", `Agent ${agentId} got ${PATCH_ATTEMPTS} new versions while this patch was applied; retry`, { retryAfterSeconds: 1 });
}
