import * as v from "valibot";
import { WATCH_HEADERS } from "../../durable-objects/session/session-watch.ts";
import type { WatchTarget } from "../../durable-objects/session/watch/watch-hub.ts";
import { ApiErrorSchema } from "../../schema/errors.ts";
import { sessionStub, type AppContext } from "../env.ts";
import { fail } from "../http-error.ts";

/**
 * How the socket is read: `batch` frames, or a relay (SSE) that resumes after an id (`new`: none);
 * `commands`: the socket may send commands, authorized by the presented key's hash
 * (durable-objects/session/watch/socket-commands.ts).
 */
export interface WatchOptions {
  batch?: boolean;
  resume?: string;
  commands?: boolean;
  /** A relay that passes Server-Sent Events through: the object writes them (with `resume`). */
  sse?: boolean;
}

/**
 * Opens a watch socket on the session object for the authenticated caller (D17): a fresh request
 * carrying only `Upgrade` and the identity headers this worker controls, so nothing the client
 * sent (its key, a browser token in `?access_token=`) reaches the object. Answers the object's
 * 101 response and its socket, or throws its refusal (404 SessionNotFound / UnknownLane, 401 revoked, 503).
 */
export async function openWatchSocket(c: AppContext, sessionId: string, target: WatchTarget, options: WatchOptions = {}): Promise<{ upgraded: Response; webSocket: WebSocket }> {
  const { tenantId, keyId } = c.get("caller");
  const headers = new Headers({ upgrade: "websocket", [WATCH_HEADERS.kind]: target.kind, [WATCH_HEADERS.keyId]: keyId });
  if (target.kind === "lane") headers.set(WATCH_HEADERS.lane, target.lane);
  if (options.batch) headers.set(WATCH_HEADERS.batch, "true");
  if (options.resume !== undefined) headers.set(WATCH_HEADERS.resume, options.resume);
  if (options.commands) headers.set(WATCH_HEADERS.commands, c.get("presentedKey").hash);
  if (options.sse) headers.set(WATCH_HEADERS.format, "sse");
  const token = c.get("browserToken");
  if (token) headers.set(WATCH_HEADERS.tokenExpires, String(token.e));
  const url = new URL(c.req.url);
  url.search = "";
  const upgraded = await sessionStub(c.env, tenantId, sessionId).fetch(new Request(url, { headers }));
  const webSocket = upgraded.webSocket;
  if (upgraded.status !== 101 || !webSocket) throw fail(...(await objectError(upgraded)));
  return { upgraded, webSocket };
}

/** The object's refusal (`{ error }` with its status) as an edge failure. */
async function objectError(response: Response): Promise<Parameters<typeof fail>> {
  const body: unknown = await response.json().catch(() => undefined);
  const parsed = v.safeParse(v.object({ error: ApiErrorSchema }), body);
  if (!parsed.success) return ["Internal", `The session object answered ${response.status}`];
  const { code, message, details } = parsed.output.error;
  return [code, message, details];
}

/** Closes a relay socket a route opened but will not use (its prompt was refused). */
export function closeQuietly(ws: WebSocket | undefined): void {
  try {
    ws?.accept();
    ws?.close(1000, "The prompt was not accepted");
  } catch {
    // Not open.
  }
}
