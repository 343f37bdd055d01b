import type { Context } from "hono";
import { IdSchema } from "../../schema/api.ts";
import { LaneNameSchema, WaitQuerySchema } from "../../schema/lane-api.ts";
import { sessionStub, type AppEnv } from "../env.ts";
import { idempotent } from "../middleware/idempotency.ts";
import { pathParam, queryParams } from "../validate.ts";

/**
 * The session object and lane name a lane route addresses, validated before the object is
 * touched. The tenant comes only from the verified key: another tenant's session id names an
 * object that does not exist, which answers 404 SessionNotFound.
 */
export function laneTarget(c: Context<AppEnv>) {
  const { tenantId } = c.get("caller");
  const sessionId = pathParam(c, "sid", IdSchema);
  const lane = pathParam(c, "lane", LaneNameSchema);
  return { stub: sessionStub(c.env, tenantId, sessionId), lane, sessionId };
}

/** A further id in the path (entry or operation id), validated like ids. */
export const pathId = (c: Context<AppEnv>, name: string): string => pathParam(c, name, IdSchema);

/** `?wait=<seconds ≤ 60>` in milliseconds, or `fallbackMs` when absent. */
export const waitMs = (c: Context<AppEnv>, fallbackMs: number): number => queryParams(c, WaitQuerySchema).wait ?? fallbackMs;

/** Idempotency-Key on the lane's creating POSTs (D15), remembered by the session object. */
export const sessionIdempotency = idempotent((c) => sessionStub(c.env, c.get("caller").tenantId, pathParam(c, "sid", IdSchema)));
