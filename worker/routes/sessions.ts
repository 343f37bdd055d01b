import { Hono } from "hono";
import { CreateSessionSchema } from "../../schema/api.ts";
import { metadataFilters, SessionListQuerySchema } from "../../schema/session-search.ts";
import { PatchSessionSchema } from "../../schema/api-sessions.ts";
import { ForkSessionSchema, forkOptionsOf } from "../../schema/api-fork.ts";
import { toWire } from "../../schema/wire.ts";
import { removeSessionObjects } from "../../durable-objects/session/session-removal.ts";
import { sessionStub, tenantStub, type AppEnv } from "../env.ts";
import { fail, invalidInput, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { idempotent, keyDerivedToken, newId, replayInstead } from "../middleware/idempotency.ts";
import { sessionIncarnations } from "../middleware/session-incarnations.ts";
import { assertTenantCanUse } from "../model-check.ts";
import { jsonBody, queryParams } from "../validate.ts";
import { registerCreated } from "./session-registration.ts";
import { sessionTarget } from "./session-target.ts";

/**
 * Sessions of the authenticated tenant (spec/API.md "Sessions"). The object is named
 * `${tenantId}:${sessionId}` with the tenant of the verified key, so another tenant's id names an
 * object that holds no session: 404 SessionNotFound.
 */
export const sessionRoutes = new Hono<AppEnv>()
  .use(requireTenant)
  // Idempotency-Key (D15): the tenant's object remembers keys of session creation.
  .post("/", idempotent((c) => tenantStub(c.env, c.get("caller").tenantId)), async (c) => {
    const { tenantId } = c.get("caller");
    const body = await jsonBody(c, CreateSessionSchema);
    if (body.settings?.defaultModel) await assertTenantCanUse(c.env, tenantId, body.settings.defaultModel);
    // With an Idempotency-Key, the session id (when not given) and the creation token derive from
    // the claimed key: a retry after a failure part-way (the session created, the answer lost)
    // addresses the same object and gets that session back, not a second one or `SessionExists`.
    const creationToken = await keyDerivedToken(c);
    const sessionId = body.id ?? newId("s_", 32, creationToken);
    // The version and the tenant's sealed copies for this session, asked once, here: the session
    // holds all it runs with from then on, and no run asks the tenant object for its agent.
    const agent = body.agent && replyValue(await tenantStub(c.env, tenantId).agentForSession(body.agent.id, body.agent.version, sessionId));
    // The version's default model as a move checks it (the tenant's keys may have changed since the
    // version was made), unless the request's settings name their own: 422 before anything is written.
    const versionDefault = agent?.agent.settings?.defaultModel;
    if (versionDefault && body.settings?.defaultModel === undefined) await assertTenantCanUse(c.env, tenantId, versionDefault);
    const view = replyValue(
      await sessionStub(c.env, tenantId, sessionId).create({
        tenantId,
        sessionId,
        ...(agent !== undefined && { agent: toWire(agent) }),
        ...(body.name !== undefined && { name: body.name }),
        ...(body.settings !== undefined && { settings: toWire(body.settings) }),
        ...(body.resources !== undefined && { resources: toWire(body.resources) }),
        ...(body.tools !== undefined && { tools: toWire(body.tools) }),
        ...(body.metadata !== undefined && { metadata: body.metadata }),
        ...(creationToken !== undefined && { creationToken }),
      }),
    );
    // Indexed after the session exists, so a listing never shows a session that does not; a
    // failure here answers 5xx, and the retry (same key) re-indexes the session it gets back.
    await registerCreated(c.env, tenantId, view);
    // http tool secrets are in this answer only: a replay (same Idempotency-Key) answers the
    // session without them, since a secret is shown once and stored nowhere in plain text.
    const { toolSecrets, ...session } = view;
    if (toolSecrets !== undefined) replayInstead(c, 201, session);
    return c.json(view, 201);
  })
  // The tenant's index only (tenant-listings.ts, session-search.ts): one object, however many
  // sessions are listed or match; a search never calls a session object.
  .get("/", async (c) => {
    const { tenantId } = c.get("caller");
    const query = queryParams(c, SessionListQuerySchema);
    const filters = metadataFilters(c.req.queries());
    if (!filters.ok) throw invalidInput(filters.problem.where, filters.problem.what);
    const search = {
      limit: query.limit,
      order: query.order,
      metadata: filters.pairs,
      ...(query.cursor !== undefined && { cursor: query.cursor }),
      ...(query.agent !== undefined && { agent: query.agent }),
      ...(query.status !== undefined && { status: query.status }),
      ...(query.createdAfter !== undefined && { createdAfter: query.createdAfter }),
      ...(query.createdBefore !== undefined && { createdBefore: query.createdBefore }),
    };
    return c.json(replyValue(await tenantStub(c.env, tenantId).searchSessions(search)));
  })
  .get("/:sid", async (c) => {
    const { stub } = sessionTarget(c);
    return c.json(replyValue(await stub.view()));
  })
  // `{ name?, settings?, metadata?, agent? }`. Every refusal comes before the first write, so a
  // refused PATCH leaves the session as it was: the default model, the agent version and its
  // models are asked of the tenant; then the move with the settings over the version's, or the
  // settings alone (settings_update events), with the metadata merged on the session's line, in
  // one commit checked whole (a concurrent PATCH cannot make the metadata's bound refuse it after
  // the settings were written); then the name. A new name or metadata reaches the listing index
  // before the answer.
  .patch("/:sid", async (c) => {
    const { tenantId, sessionId, stub } = sessionTarget(c);
    const body = await jsonBody(c, PatchSessionSchema);
    if (body.settings?.defaultModel) await assertTenantCanUse(c.env, tenantId, body.settings.defaultModel);
    const bundle = body.agent === undefined ? undefined : replyValue(await tenantStub(c.env, tenantId).agentForSession(body.agent.id, body.agent.version, sessionId));
    // The version's model was usable when the version was made; the tenant's keys may have changed since (as at creation: 422).
    if (bundle?.agent.model) await assertTenantCanUse(c.env, tenantId, bundle.agent.model);
    // So is its default model, unless this PATCH's settings name their own.
    const versionDefault = bundle?.agent.settings?.defaultModel;
    if (versionDefault && body.settings?.defaultModel === undefined) await assertTenantCanUse(c.env, tenantId, versionDefault);
    let toolSecrets: Record<string, string> = {};
    // The metadata as merged and the seq of its write, for the index (none when it was not patched).
    let indexed: { metadata: Record<string, string>; seq: number } | undefined;
    if (bundle !== undefined) {
      const moved = replyValue(await stub.moveToAgent(toWire(bundle), body.settings === undefined ? undefined : toWire(body.settings), body.metadata));
      await tenantStub(c.env, tenantId).setSessionAgent(sessionId, moved.agent, moved.seq);
      toolSecrets = moved.toolSecrets;
      if (moved.metadata !== undefined) indexed = { metadata: moved.metadata, seq: moved.seq };
    } else if (body.settings !== undefined && body.metadata !== undefined) {
      indexed = replyValue(await stub.updateSettingsAndMetadata(toWire(body.settings), body.metadata));
    } else if (body.settings !== undefined) replyValue(await stub.updateSettings(toWire(body.settings)));
    else if (body.metadata !== undefined) indexed = replyValue(await stub.updateMetadata(body.metadata));
    if (indexed !== undefined) await tenantStub(c.env, tenantId).setSessionMetadata(sessionId, indexed.metadata, indexed.seq);
    if (body.name !== undefined) {
      const { seq } = replyValue(await stub.setName(body.name));
      await tenantStub(c.env, tenantId).renameSession(sessionId, body.name, seq);
    }
    // Every PATCH is activity (docs/data.md, retention): one that told the tenant nothing above
    // (settings only) tells it now, so a session queued as idle leaves the queue.
    if (bundle === undefined && indexed === undefined && body.name === undefined) await tenantStub(c.env, tenantId).sessionChanged(sessionId);
    const view = replyValue(await stub.view());
    // Http tools the new version brought: their secrets are in this answer only.
    return c.json(Object.keys(toolSecrets).length > 0 ? { ...view, toolSecrets } : view);
  })
  // A new session from one lane's path or the whole tree (reference §1.11): the new object pulls
  // pages from the source; indexed once it exists, like a created session.
  .post("/:sid/fork", idempotent((c) => tenantStub(c.env, c.get("caller").tenantId)), async (c) => {
    const { tenantId, sessionId: sourceSessionId } = sessionTarget(c);
    const body = await jsonBody(c, ForkSessionSchema);
    const creationToken = await keyDerivedToken(c);
    const sessionId = body.id ?? newId("s_", 32, creationToken);
    const view = replyValue(
      await sessionStub(c.env, tenantId, sessionId).createFork({
        tenantId,
        sessionId,
        sourceSessionId,
        options: toWire(forkOptionsOf(body)),
        ...(creationToken !== undefined && { creationToken }),
      }),
    );
    await registerCreated(c.env, tenantId, view);
    return c.json(view, 201);
  })
  // The object's storage and its suspended runs' and schedules' shard rows first (session-removal.ts), then the
  // index row; a repeat (or a retry after a partial failure) still removes what is left and answers 404.
  .delete("/:sid", async (c) => {
    const { tenantId, sessionId } = sessionTarget(c);
    const { deleted, createdAt } = await removeSessionObjects(c.env, tenantId, sessionId);
    sessionIncarnations.forget(tenantId, sessionId);
    await tenantStub(c.env, tenantId).unregisterSession(sessionId, createdAt);
    if (!deleted) throw fail("SessionNotFound", "Session not found");
    return c.body(null, 204);
  });
