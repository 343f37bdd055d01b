import { Hono } from "hono";
import { metadataFilters } from "../../schema/session-search.ts";
import { tenantStub, type AppEnv } from "../env.ts";
import { invalidInput, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";

/**
 * `DELETE /v1/sessions?metadata.<key>=<value>` (docs/data.md "Deleting data"), mounted at /v1/sessions: one
 * end user's sessions, say. The tenant's object queues every session holding all the pairs (the
 * filter syntax of `GET /v1/sessions`) and answers 202 `{ matched }`; they leave listings at once
 * and are deleted in the background by its alarm (tenant/data-lifecycle.ts). At least one filter:
 * a DELETE of every session is not a typo away.
 */
export const sessionDeletionRoutes = new Hono<AppEnv>().delete("/", requireTenant, async (c) => {
  const { tenantId } = c.get("caller");
  const filters = metadataFilters(c.req.queries());
  if (!filters.ok) throw invalidInput(filters.problem.where, filters.problem.what);
  if (filters.pairs.length === 0) throw invalidInput("query", "give at least one metadata.<key>=<value> filter: the sessions holding all of them are deleted");
  return c.json(replyValue(await tenantStub(c.env, tenantId).deleteSessionsByMetadata(filters.pairs)), 202);
});
