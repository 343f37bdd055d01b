import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env.ts";

/** A client's own id worth echoing: printable ASCII without spaces, at most 128 characters. */
const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * Every request gets a fresh id of the server's own (ARCHITECTURE D16: a 500 is logged with it),
 * answered as `X-Request-Id`. hono's `requestId()` adopts a client's `X-Request-Id` instead, which
 * lets a client choose (and collide) the ids that logs and error bodies carry; here a well-formed
 * client id is only kept as `clientRequestId`, echoed beside the server's in errors and logs.
 */
export const requestIds = createMiddleware<AppEnv>(async (c, next) => {
  const id = crypto.randomUUID();
  c.set("requestId", id);
  const client = c.req.header("x-request-id");
  c.set("clientRequestId", client !== undefined && CLIENT_REQUEST_ID.test(client) ? client : undefined);
  c.header("X-Request-Id", id);
  await next();
});
