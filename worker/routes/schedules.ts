import { Hono } from "hono";
import { DEFERRED_INDEX_SHARDS, shardName } from "../../durable-objects/session/due-work/deferred-registrations.ts";
import { CreateScheduleSchema, PatchScheduleSchema, ScheduleRunsQuerySchema, TenantSchedulesQuerySchema, type ListedSchedule } from "../../schema/schedules.ts";
import { toWire } from "../../schema/wire.ts";
import type { AppEnv } from "../env.ts";
import { replyValue } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { jsonBody, queryParams } from "../validate.ts";
import { laneTarget, pathId, sessionIdempotency } from "./lane-target.ts";
import { idempotencyScope } from "../middleware/idempotency.ts";

// Schedules (spec/API.md "Schedules"): a lane's prompts that start on their own. The lane's routes
// are mounted at `/v1/sessions/:sid/lanes` (before lanes.ts, which would authenticate them again),
// the tenant-wide listing at `/v1`. Bodies are validated (schema/schedules.ts) before any object
// is touched; the session object owns the schedules (durable-objects/session/session-schedules.ts).

export const laneScheduleRoutes = new Hono<AppEnv>()
  // 201 the new schedule; 200 the same schedule for a repeat with its id and body; 409
  // ScheduleExists for its id with another body; 422 LimitExceeded beyond 20 on the lane.
  .post("/:lane/schedules", requireTenant, sessionIdempotency, async (c) => {
    const { stub, lane } = laneTarget(c);
    const body = await jsonBody(c, CreateScheduleSchema);
    const { schedule, created } = replyValue(await stub.createSchedule(lane, toWire(body), idempotencyScope(c)));
    return c.json(schedule, created ? 201 : 200);
  })
  // At most 20 per lane: one page, by id.
  .get("/:lane/schedules", requireTenant, async (c) => {
    const { stub, lane } = laneTarget(c);
    return c.json({ items: replyValue(await stub.laneSchedules(lane)) });
  })
  .get("/:lane/schedules/:id", requireTenant, async (c) => {
    const { stub, lane } = laneTarget(c);
    return c.json(replyValue(await stub.getSchedule(lane, pathId(c, "id"))));
  })
  .patch("/:lane/schedules/:id", requireTenant, async (c) => {
    const { stub, lane } = laneTarget(c);
    const id = pathId(c, "id");
    const patch = await jsonBody(c, PatchScheduleSchema);
    return c.json(replyValue(await stub.patchSchedule(lane, id, toWire(patch))));
  })
  .delete("/:lane/schedules/:id", requireTenant, async (c) => {
    const { stub, lane } = laneTarget(c);
    replyValue(await stub.deleteSchedule(lane, pathId(c, "id")));
    return c.body(null, 204);
  })
  // `{ items: [{ dueAt, firedAt, operationId? | skipped?, detail?, coalesced? }], nextCursor }`, newest first.
  .get("/:lane/schedules/:id/runs", requireTenant, async (c) => {
    const { stub, lane } = laneTarget(c);
    const id = pathId(c, "id");
    const { limit, cursor } = queryParams(c, ScheduleRunsQuerySchema);
    return c.json(replyValue(await stub.scheduleRuns(lane, id, limit, cursor)));
  });

export const tenantScheduleRoutes = new Hono<AppEnv>()
  // Every schedule of the tenant, by session and id, from the DeferredIndex shards (one call to
  // each, whatever the number of sessions): never a call to a session.
  .get("/schedules", requireTenant, async (c) => {
    const { tenantId } = c.get("caller");
    const { limit, cursor } = queryParams(c, TenantSchedulesQuerySchema);
    const pages = await Promise.all(
      Array.from({ length: DEFERRED_INDEX_SHARDS }, (_, index) => c.env.DEFERRED_INDEX.getByName(shardName(index)).listSchedules(tenantId, limit + 1, cursor)),
    );
    const merged: ListedSchedule[] = pages.flat().sort((a, b) => (a.sessionId === b.sessionId ? compare(a.id, b.id) : compare(a.sessionId, b.sessionId)));
    const items = merged.slice(0, limit);
    const last = items.at(-1);
    return c.json({ items, nextCursor: merged.length > limit && last ? `${last.sessionId}.${last.id}` : null });
  });

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
