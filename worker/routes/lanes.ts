import { Hono } from "hono";
import { IdSchema } from "../../schema/api.ts";
import { NamePageQuerySchema } from "../../schema/api-sessions.ts";
import { EnqueueSchema, LaneConfigPatchSchema, NewLaneEntrySchema, PutLaneSchema } from "../../schema/lane-api.ts";
import { toWire } from "../../schema/wire.ts";
import { sessionStub, type AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, pathParam, queryParams } from "../validate.ts";
import { acceptingAiSdkRoutes, aiSdkRoutes } from "./ai-sdk.ts";
import { laneEventRoutes } from "./lane-events.ts";
import { laneTarget, pathId, sessionIdempotency } from "./lane-target.ts";
import { idempotencyScope } from "../middleware/idempotency.ts";
import { acceptingOperationRoutes, operationRoutes } from "./operations.ts";

/**
 * Lanes and their queues (spec/API.md "Lanes", "Queue"), mounted at `/v1/sessions/:sid/lanes`;
 * the operation routes (operations.ts) are mounted here too, behind the same authentication.
 * Path parameters and bodies are validated before the session object is touched.
 */
export const laneRoutes = new Hono<AppEnv>()
  // First: they authenticate in their own tenant call (with the reservation) and answer before the
  // `requireTenant` below would run.
  .route("/", acceptingOperationRoutes)
  .route("/", acceptingAiSdkRoutes)
  .use(requireTenant)
  .route("/", laneEventRoutes)
  .route("/", aiSdkRoutes)
  // `{ items: LaneInfo[], nextCursor }` by name.
  .get("/", async (c) => {
    const { tenantId } = c.get("caller");
    const sessionId = pathParam(c, "sid", IdSchema);
    const { limit, cursor } = queryParams(c, NamePageQuerySchema);
    return c.json(replyValue(await sessionStub(c.env, tenantId, sessionId).lanes({ limit, ...(cursor && { after: cursor.name }) })));
  })
  // Get-or-create: 201 when this request created the lane, 200 when it existed. 422 LimitExceeded
  // when a new lane would pass SESSION_LIMITS (lanes, or branches for a lane on a new branch).
  .put("/:lane", async (c) => {
    const { stub, lane } = laneTarget(c);
    const { createAt, agent, ...configuration } = await jsonBody(c, PutLaneSchema);
    const { created, ...info } = replyValue(await stub.acquireLane(lane, createAt, toWire(configuration), agent));
    return c.json(info, created ? 201 : 200);
  })
  .get("/:lane", async (c) => {
    const { stub, lane } = laneTarget(c);
    return c.json(replyValue(await stub.laneExecution(lane)));
  })
  // 422 UnknownModel / UnknownTool for what the deployment does not offer; nothing is written then.
  .patch("/:lane/config", async (c) => {
    const { stub, lane } = laneTarget(c);
    const patch = await jsonBody(c, LaneConfigPatchSchema);
    return c.json(replyValue(await stub.configureLane(lane, toWire(patch))));
  })
  // The lane's operation-aware append: placed now when idle, queued as a `write` item when busy.
  .post("/:lane/entries", sessionIdempotency, async (c) => {
    const { stub, lane } = laneTarget(c);
    const entry = await jsonBody(c, NewLaneEntrySchema);
    return c.json(replyValue(await stub.appendToLane(lane, toWire(entry), idempotencyScope(c))), 201);
  })
  // `seq` is the per-session event counter a watcher resumes from; until the session keeps one
  // (WebSocket watch), the snapshot is answered with seq 0.
  .get("/:lane/snapshot", async (c) => {
    const { stub, lane } = laneTarget(c);
    // The seq is the session's watch-event counter at capture, as in a watch's snapshot message.
    return c.json(replyValue(await stub.laneSnapshotAt(lane)));
  })
  // Always admits, idle or busy.
  .post("/:lane/queue", sessionIdempotency, async (c) => {
    const { stub, lane } = laneTarget(c);
    const { kind, message, images } = await jsonBody(c, EnqueueSchema);
    return c.json(replyValue(await stub.enqueue(lane, kind, toWire({ message, ...(images && { images }) }), idempotencyScope(c))), 201);
  })
  .delete("/:lane/queue/:entryId", async (c) => {
    const { stub, lane } = laneTarget(c);
    const entryId = pathId(c, "entryId");
    return c.json(replyValue(await stub.cancelQueued(lane, entryId)));
  })
  .route("/", operationRoutes);
