import { Hono } from "hono";
import { CreateSessionSchema, IdSchema, PageQuerySchema } from "../../schema/api.ts";
import { toWire } from "../../schema/wire.ts";
import { sessionStub, tenantStub, type AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { idempotent } from "../middleware/idempotency.ts";
import { jsonBody, validate } from "../validate.ts";

/** Sessions of the authenticated tenant (spec/API.md "Sessions"). Other tenants' ids are 404. */
export const sessionRoutes = new Hono<AppEnv>()
  .use(requireTenant)
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
    return c.json(replyValue(await stub.info()), 201);
  })
  .get("/", async (c) => {
    const { tenantId } = c.get("caller");
    const query = validate(PageQuerySchema, c.req.query());
    const page = replyValue(await tenantStub(c.env, tenantId).listSessions(query.limit ?? 50, query.cursor));
    const items = await Promise.all(page.items.map(async (item) => replyValue(await sessionStub(c.env, tenantId, item.sessionId).info())));
    return c.json({ items, nextCursor: page.nextCursor });
  })
  .get("/:sid", async (c) => {
    const { tenantId } = c.get("caller");
    const sessionId = validate(IdSchema, c.req.param("sid"));
    return c.json(replyValue(await sessionStub(c.env, tenantId, sessionId).info()));
  });
