import { Hono } from "hono";
import { CreateSessionSchema, PageQuerySchema } from "../../schema/api.ts";
import { PatchSessionSchema } from "../../schema/api-sessions.ts";
import { fromWire, toWire } from "../../schema/wire.ts";
import { sessionStub, tenantStub, type AppEnv } from "../env.ts";
import { fail, HttpFailure, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { idempotent } from "../middleware/idempotency.ts";
import { jsonBody, validate } from "../validate.ts";
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
    const sessionId = body.id ?? `s_${crypto.randomUUID().replace(/-/g, "")}`;
    const stub = sessionStub(c.env, tenantId, sessionId);
    const created = await stub.create({ tenantId, sessionId, ...(body.name !== undefined && { name: body.name }) });
    const info = replyValue(created);
    // The index is idempotent; registering after creation never lists a session that does not exist.
    await tenantStub(c.env, tenantId).registerSession(sessionId, info.createdAt);
    if (body.settings) replyValue(await stub.updateSettings(toWire(body.settings)));
    return c.json(replyValue(await stub.view()), 201);
  })
  .get("/", async (c) => {
    const { tenantId } = c.get("caller");
    const query = validate(PageQuerySchema, c.req.query());
    const page = replyValue(await tenantStub(c.env, tenantId).listSessions(query.limit ?? 50, query.cursor));
    const views = await Promise.all(page.items.map(async (item) => fromWire(await sessionStub(c.env, tenantId, item.sessionId).view())));
    // An index row whose session is gone (a deletion interrupted before unregistering) is skipped.
    const items = views.flatMap((view) => {
      if (view.ok) return [view.value];
      if (view.error.code === "SessionNotFound") return [];
      throw new HttpFailure(view.error);
    });
    return c.json({ items, nextCursor: page.nextCursor });
  })
  .get("/:sid", async (c) => {
    const { stub } = sessionTarget(c);
    return c.json(replyValue(await stub.view()));
  })
  // `{ name?, settings? }`: the name (null removes it), then the settings patch (settings_update events).
  .patch("/:sid", async (c) => {
    const { stub } = sessionTarget(c);
    const body = await jsonBody(c, PatchSessionSchema);
    if (body.name !== undefined) replyValue(await stub.setName(body.name));
    if (body.settings !== undefined) replyValue(await stub.updateSettings(toWire(body.settings)));
    return c.json(replyValue(await stub.view()));
  })
  // The object's storage first, then the index row; a repeat (or a retry after a partial failure)
  // still removes the index row and answers 404.
  .delete("/:sid", async (c) => {
    const { tenantId, sessionId, stub } = sessionTarget(c);
    const { deleted } = replyValue(await stub.deleteSession());
    await tenantStub(c.env, tenantId).unregisterSession(sessionId);
    if (!deleted) throw fail("SessionNotFound", "Session not found");
    return c.body(null, 204);
  });
