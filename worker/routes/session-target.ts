import { IdSchema } from "../../schema/api.ts";
import { sessionStub, type AppContext } from "../env.ts";
import { idempotent } from "../middleware/idempotency.ts";
import { pathParam } from "../validate.ts";

/**
 * The caller's session named by the `sid` path parameter, validated before anything is touched.
 * The object is `${tenantId}:${sessionId}` with the tenant of the verified key, so another
 * tenant's session id names an object that holds no session: 404 SessionNotFound.
 */
export function sessionTarget(c: AppContext) {
  const { tenantId } = c.get("caller");
  const sessionId = pathParam(c, "sid", IdSchema);
  return { tenantId, sessionId, stub: sessionStub(c.env, tenantId, sessionId) };
}

/** Idempotency-Key on a session's creating POSTs (D15), remembered by the session object. */
export const sessionIdempotency = idempotent((c) => sessionTarget(c).stub);
