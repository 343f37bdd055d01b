import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ERROR_STATUS, invalidInputError, type ApiError, type RpcJson, type RpcResult } from "../schema/errors.ts";
import { fromWire, type Wire } from "../schema/wire.ts";

/** A documented API error raised at the edge; mapped once to its status (ARCHITECTURE D16). */
export class HttpFailure extends Error {
  constructor(readonly error: ApiError) {
    super(error.message);
  }
}

export const fail = (code: ApiError["code"], message: string, details?: ApiError["details"]): HttpFailure =>
  new HttpFailure({ code, message, ...(details && { details }) });

/** A 400 ValidationFailed about one input, `<where>: <what>` with `details.issues` (docs/api.md). */
export const invalidInput = (where: string, what: string): HttpFailure => new HttpFailure(invalidInputError(where, what));

/** The server's id of this request, and the client's own `X-Request-Id` when it sent one (echoed, never the id). */
export function requestIdsOf(c: Context): { requestId?: string; clientRequestId?: string } {
  const requestId: unknown = c.get("requestId");
  const clientRequestId: unknown = c.get("clientRequestId");
  return { ...(typeof requestId === "string" && { requestId }), ...(typeof clientRequestId === "string" && { clientRequestId }) };
}

/** `{ "error": { code, message, details?, requestId, clientRequestId? } }` with the code's status (or `status`). */
export function errorResponse(c: Context, error: ApiError, status: ContentfulStatusCode = ERROR_STATUS[error.code]): Response {
  const headers: Record<string, string> = {};
  // The codes docs/api.md promises `Retry-After` with, wherever they are raised.
  if (error.code === "Overloaded" || error.code === "SessionClosed" || error.code === "RateLimited" || error.code === "IdempotencyInProgress") {
    const after = error.details?.retryAfterSeconds;
    headers["Retry-After"] = typeof after === "number" ? String(after) : "1";
  }
  return c.json({ error: { ...error, ...requestIdsOf(c) } }, status, headers);
}

/** The value of a session object's reply, or its tagged error raised as an HTTP failure. */
export function replyValue<T>(reply: Wire<RpcResult<T>>): T {
  const result = fromWire(reply);
  if (!result.ok) throw new HttpFailure(result.error);
  return result.value;
}

/** A read's JSON bytes as the 200 answer, passed through unparsed; its tagged error raised as an HTTP failure. */
export function jsonAnswer<T>(c: Context, reply: RpcJson<T>): Response {
  if (!reply.ok) throw new HttpFailure(reply.error);
  return c.body(reply.json, 200, { "content-type": "application/json" });
}
