import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import * as v from "valibot";
import { WATCH_HEADERS } from "../../durable-objects/session/session-watch.ts";
import type { WatchTarget } from "../../durable-objects/session/watch/watch-hub.ts";
import { IdSchema } from "../../schema/api.ts";
import { ApiErrorSchema } from "../../schema/errors.ts";
import { sessionStub, type AppContext, type AppEnv } from "../env.ts";
import { errorResponse, fail } from "../http-error.ts";
import { requireTenant } from "../middleware/auth.ts";
import { WatchQuerySchema } from "../../schema/watch.ts";
import { pathParam, queryParams } from "../validate.ts";

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
  const { tenantId, keyId } = c.get("caller");
  // A fresh header set: nothing the client sent (its key included) reaches the object.
  const headers = new Headers({ upgrade: "websocket", [WATCH_HEADERS.kind]: target.kind, [WATCH_HEADERS.keyId]: keyId });
  if (target.kind === "lane") {
    headers.set(WATCH_HEADERS.lane, target.lane);
    // Commands on the socket (spec "Commands on the lane socket") are the prompt scope's: a key
    // may send them, a browser token only with that scope. The key hash authorizes their quota.
    const token = c.get("browserToken");
    if (!token || token.p.includes("prompt")) headers.set(WATCH_HEADERS.commands, c.get("presentedKey").hash);
  }
  if (batch === "true") headers.set(WATCH_HEADERS.batch, "true");
  // Nor a browser token sent as `?access_token=`.
  const url = new URL(c.req.url);
  url.searchParams.delete("access_token");
  const upgraded = await sessionStub(c.env, tenantId, sessionId).fetch(new Request(url, { headers }));
  if (upgraded.status !== 101 || !upgraded.webSocket) throw fail(...(await objectError(upgraded)));
  const protocol = offeredBearerProtocol(c.req.header("sec-websocket-protocol"));
  if (protocol === undefined) return upgraded;
  // Standard clients require the server to select the subprotocol they authenticated with.
  return new Response(null, { status: 101, webSocket: upgraded.webSocket, headers: { "Sec-WebSocket-Protocol": protocol } });
}

/** The first offered `bearer.<key>` subprotocol, selected verbatim. */
function offeredBearerProtocol(header: string | undefined): string | undefined {
  return header
    ?.split(",")
    .map((protocol) => protocol.trim())
    .find((protocol) => protocol.startsWith("bearer."));
}

/** The object's refusal (`{ error }` with its status) as an edge failure. */
async function objectError(response: Response): Promise<Parameters<typeof fail>> {
  const body: unknown = await response.json().catch(() => undefined);
  const parsed = v.safeParse(v.object({ error: ApiErrorSchema }), body);
  if (!parsed.success) return ["Internal", `The session object answered ${response.status}`];
  const { code, message, details } = parsed.output.error;
  return [code, message, details];
}
