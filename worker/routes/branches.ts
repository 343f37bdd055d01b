import { Hono } from "hono";
import { BranchEntriesQuerySchema, BranchNameSchema, CreateBranchSchema, NamePageQuerySchema, NewBranchEntrySchema } from "../../schema/api-sessions.ts";
import { toWire } from "../../schema/wire.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { jsonAnswer, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, pathParam, queryParams } from "../validate.ts";
import { sessionIdempotency, sessionTarget } from "./session-target.ts";
import { idempotencyScope } from "../middleware/idempotency.ts";

// Named branches: movable tips into the session's tree (spec/API.md "Branches"). Mounted at
// `/v1/sessions/:sid/branches`.

function branchTarget(c: AppContext) {
  const target = sessionTarget(c);
  return { ...target, name: pathParam(c, "name", BranchNameSchema) };
}

export const branchRoutes = new Hono<AppEnv>()
  .use(requireTenant)
  // `{ items: [{ name, tipId, lane }], nextCursor }` by name: `lane` says whether a lane is bound
  // to the branch (a lane's branch carries the lane's name).
  .get("/", async (c) => {
    const { stub } = sessionTarget(c);
    const { limit, cursor } = queryParams(c, NamePageQuerySchema);
    return c.json(replyValue(await stub.branches({ limit, ...(cursor && { after: cursor.name }) })));
  })
  // `{ name, at: entryId | null }` → 201 `{ name, tipId }`; 409 BranchExists, 404 UnknownTarget,
  // 422 LimitExceeded when the session holds SESSION_LIMITS.branches already.
  .post("/", sessionIdempotency, async (c) => {
    const { stub } = sessionTarget(c);
    const { name, at } = await jsonBody(c, CreateBranchSchema);
    return c.json(replyValue(await stub.createBranch(name, at, idempotencyScope(c))), 201);
  })
  // The branch scan of reference §1.6, a page at a time (`limit` ≤ 1000, default 50; the cursor is
  // the last returned seq). newestFirst walks root-ward from `start` and stops once the page is
  // full. oldestFirst has to read the whole path's structure (ids, types, seqs) from `start` to
  // the root before ordering, so each of its pages costs the path length; payloads are read only
  // for the page.
  .get("/:name/entries", async (c) => {
    const { stub, name } = branchTarget(c);
    const { limit, cursor, ...scan } = queryParams(c, BranchEntriesQuerySchema);
    return jsonAnswer(c, await stub.branchEntriesJson(name, { ...scan, limit, ...(cursor && { cursor }) }));
  })
  // `{ message }` or `{ customType, data? }` → 201 `{ entryId, placed }`. On a lane's branch this
  // is the lane's operation-aware append (placed now when idle, queued as a `write` when busy,
  // `placed: false`); on a plain branch a raw append at the tip (always placed).
  .post("/:name/entries", sessionIdempotency, async (c) => {
    const { stub, name } = branchTarget(c);
    const entry = toWire(await jsonBody(c, NewBranchEntrySchema));
    return c.json(replyValue(await stub.appendToBranch(name, entry, idempotencyScope(c))), 201);
  });
