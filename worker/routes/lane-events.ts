import { Hono } from "hono";
import { formatStreamId, LaneEventsQuerySchema, parseStreamId, SSE_HEARTBEAT_DEFAULT_SECONDS } from "../../schema/watch-resume.ts";
import type { AppEnv } from "../env.ts";
import { queryParams } from "../validate.ts";
import { SSE_HEADERS, sseRelay } from "../watch/sse-relay.ts";
import { openWatchSocket } from "../watch/watch-upgrade.ts";
import { laneTarget } from "./lane-target.ts";

/**
 * `GET …/lanes/{lane}/events`: the lane's watch stream as Server-Sent Events (spec/API.md
 * "Streaming over HTTP", docs/api-watch.md "Streaming over HTTP (SSE)"), served here in the front
 * worker over a relay watch socket to the session object (worker/watch/sse-relay.ts). Mounted by
 * lanes.ts behind its authentication: 401, then 400 (ids, query), then the object's 404s, all
 * before the stream starts. Whatever `Accept` says, the answer is the stream (`EventSource` sends
 * `text/event-stream`; curl and most libraries send something else and mean the same).
 */
export const laneEventRoutes = new Hono<AppEnv>().get("/:lane/events", async (c) => {
  const { lane, sessionId } = laneTarget(c);
  const { after, heartbeat } = queryParams(c, LaneEventsQuerySchema);
  // The header a reconnecting EventSource sends wins over the query; a garbled id asks for a snapshot.
  const from = parseStreamId(c.req.header("last-event-id") ?? after);
  const { webSocket } = await openWatchSocket(c, sessionId, { kind: "lane", lane }, { resume: from ? formatStreamId(from) : "new", batch: true, sse: true });
  const body = sseRelay(webSocket, { heartbeatMs: (heartbeat ?? SSE_HEARTBEAT_DEFAULT_SECONDS) * 1000 });
  return c.body(body, 200, SSE_HEADERS);
});
