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
  const query = c.req.queries();
  // Only metadata filters narrow a deletion: any other parameter (a listing filter such as
  // createdAfter, or a misspelt metadata.* name) is refused rather than ignored, which would make
  // the deletion wider than the listing the caller checked.
  const other = Object.keys(query).find((name) => !name.startsWith("metadata."));
  if (other !== undefined) throw invalidInput(`query.${other}`, "a deletion takes only metadata.<key>=<value> filters");
  const filters = metadataFilters(query);
  if (!filters.ok) throw invalidInput(filters.problem.where, filters.problem.what);
  if (filters.pairs.length === 0) throw invalidInput("query", "give at least one metadata.<key>=<value> filter: the sessions holding all of them are deleted");
  return c.json(replyValue(await tenantStub(c.env, tenantId).deleteSessionsByMetadata(filters.pairs)), 202);
});
