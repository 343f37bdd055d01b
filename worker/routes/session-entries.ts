import { Hono } from "hono";
import { EntriesQuerySchema, EntryIdSchema, LabelSchema, UsageQuerySchema } from "../../schema/api-sessions.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { fail, HttpFailure, jsonAnswer, replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, pathParam, queryParams } from "../validate.ts";
import { sessionTarget } from "./session-target.ts";

// The session-wide entry inventory, entry labels and the usage ledger (spec/API.md "Sessions").

function entryTarget(c: AppContext) {
  const target = sessionTarget(c);
  return { ...target, entryId: pathParam(c, "entryId", EntryIdSchema) };
}

/** Mounted at `/v1/sessions/:sid/entries`. */
export const entryRoutes = new Hono<AppEnv>()
  .use(requireTenant)
  // Every entry of the session by seq (all branches), filtered by type / customType.
  .get("/", async (c) => {
    const { stub } = sessionTarget(c);
    const { type, customType, order, limit, cursor } = queryParams(c, EntriesQuerySchema);
    return jsonAnswer(c, await stub.entriesJson({ ...(type && { type }), ...(customType && { customType }), order, limit, ...(cursor && { cursor }) }));
  })
  .get("/:entryId", async (c) => {
    const { stub, entryId } = entryTarget(c);
    return jsonAnswer(c, await stub.entryJson(entryId));
  })
  .get("/:entryId/label", async (c) => {
    const { stub, entryId } = entryTarget(c);
    return c.json(replyValue(await stub.getLabel(entryId)));
  })
  .put("/:entryId/label", async (c) => {
    const { stub, entryId } = entryTarget(c);
    const { label } = await jsonBody(c, LabelSchema);
    return c.json(await unknownEntryAsSuch(entryId, () => stub.setLabel(entryId, label)));
  })
  // Idempotent: removing an absent label (or the label of an unknown entry) is a no-op.
  .delete("/:entryId/label", async (c) => {
    const { stub, entryId } = entryTarget(c);
    replyValue(await stub.setLabel(entryId, null));
    return c.body(null, 204);
  });

/** The label of an entry that does not exist is 404 UnknownEntry, like the entry itself. */
async function unknownEntryAsSuch<T>(entryId: string, call: () => Promise<Wire<RpcResult<T>>>): Promise<T> {
  try {
    return replyValue(await call());
  } catch (error) {
    if (error instanceof HttpFailure && error.error.code === "UnknownTarget") throw fail("UnknownEntry", `Entry ${entryId} does not exist`, { entryId });
    throw error;
  }
}

/** Mounted at `/v1/sessions/:sid/usage`: ledger rows with seq ≥ fromSeq, ascending, and the session totals. */
export const usageRoutes = new Hono<AppEnv>()
  .use(requireTenant)
  .get("/", async (c) => {
    const { stub } = sessionTarget(c);
    const { fromSeq, limit } = queryParams(c, UsageQuerySchema);
    // `nextFromSeq` (an addition to the documented shape) continues the scan; null at the end.
    return jsonAnswer(c, await stub.usageJson({ ...(fromSeq !== undefined && { fromSeq }), limit }));
  });
