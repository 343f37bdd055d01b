import { Hono } from "hono";
import { PutSkillSchema, PutTemplateSchema, ResourceNameSchema } from "../../schema/api.ts";
import { toWire } from "../../schema/wire.ts";
import type { AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, pathParam } from "../validate.ts";
import { sessionTarget } from "./session-target.ts";

/** Skills and prompt templates: session resources used by skill / prompt_template runs (D6). */
// Mounted at /v1/sessions/:sid beside other sub-apps: authentication per route, not a wildcard.
export const resourceRoutes = new Hono<AppEnv>()
  .put("/skills/:name", requireTenant, async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", ResourceNameSchema);
    const skill = await jsonBody(c, PutSkillSchema);
    return c.json(replyValue(await stub.setResource("skills", name, toWire(skill))));
  })
  .delete("/skills/:name", requireTenant, async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", ResourceNameSchema);
    replyValue(await stub.setResource("skills", name, toWire(null)));
    return c.body(null, 204);
  })
  .put("/templates/:name", requireTenant, async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", ResourceNameSchema);
    const template = await jsonBody(c, PutTemplateSchema);
    return c.json(replyValue(await stub.setResource("promptTemplates", name, toWire(template))));
  })
  .delete("/templates/:name", requireTenant, async (c) => {
    const { stub } = sessionTarget(c);
    const name = pathParam(c, "name", ResourceNameSchema);
    replyValue(await stub.setResource("promptTemplates", name, toWire(null)));
    return c.body(null, 204);
  });
