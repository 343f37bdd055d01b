import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import type { WatchTarget } from "../../durable-objects/session/watch/watch-hub.ts";
import { IdSchema } from "../../schema/api.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { errorResponse } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { WatchQuerySchema } from "../../schema/watch.ts";
import { pathParam, queryParams } from "../validate.ts";
import { openWatchSocket } from "../watch/watch-upgrade.ts";

/** requireTenant, unless a middleware mounted earlier on the same path already verified the key. */
const authenticated = createMiddleware<AppEnv>(async (c, next) => {
  if (c.get("caller")) return next();
  await requireTenant(c, next);
});

/**
 * The watch streams (spec/API.md "Watch protocol"): WebSocket upgrades authenticated here, in the
 * front worker (ARCHITECTURE D17), with the `Authorization` header or a `bearer.<key>`
 * subprotocol (a key, or a browser token with the `watch` scope on lane streams), then handed to
 * the session object with the verified identity in headers this worker controls. `?batch=true` asks for `batch` frames (several events that are due together in
 * one frame). Order of checks: 401 (no valid key), 400 (ids, query), 426 `UpgradeRequired` (not an
 * upgrade), 404 (unknown or other tenant's session, unknown lane, answered by the object).
 */
export const watchRoutes = new Hono<AppEnv>()
  .get("/:sid/watch", authenticated, (c) => forward(c, { kind: "session" }))
  .get("/:sid/lanes/:lane/watch", authenticated, (c) => forward(c, { kind: "lane", lane: pathParam(c, "lane", IdSchema) }));

async function forward(c: AppContext, target: WatchTarget): Promise<Response> {
  const sessionId = pathParam(c, "sid", IdSchema);
  const { batch } = queryParams(c, WatchQuerySchema);
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
    const response = errorResponse(c, { code: "UpgradeRequired", message: "This route is a WebSocket: send Upgrade: websocket" });
    response.headers.set("Upgrade", "websocket");
    return response;
  }
  // Commands on a lane socket (spec "Commands on the lane socket") are the prompt scope's: a key's
  // socket may send them, a browser token's only with that scope.
  const token = c.get("browserToken");
  const commands = target.kind === "lane" && (!token || token.p.includes("prompt"));
  const { upgraded, webSocket } = await openWatchSocket(c, sessionId, target, { batch: batch === "true", commands });
  const protocol = offeredBearerProtocol(c.req.header("sec-websocket-protocol"));
  if (protocol === undefined) return upgraded;
  // Standard clients require the server to select the subprotocol they authenticated with.
  return new Response(null, { status: 101, webSocket, headers: { "Sec-WebSocket-Protocol": protocol } });
}

/** The first offered `bearer.<key>` subprotocol, selected verbatim. */
function offeredBearerProtocol(header: string | undefined): string | undefined {
  return header
    ?.split(",")
    .map((protocol) => protocol.trim())
    .find((protocol) => protocol.startsWith("bearer."));
}
