import { openLaneWatch, type WatchClient } from "../e2e/client-helpers.ts";
import type { WatchCommand, WatchReply } from "../../schema/watch.ts";
import { sleep, type SoakClient } from "./cluster.ts";

// Commands on a lane socket (docs/api-watch.md "Commands on the lane socket") as a client that
// survives kills sends them: it opens the lane's watch socket, sends the frame with its client id,
// and reads until the reply with that id; when the socket dies first (the server was killed), it
// opens a new one and sends the very same frame again. A repeated id answers what the first answered
// and does nothing twice, which is what the checker then verifies.

const COMMAND_WINDOW_MS = 180_000;

export async function socketCommand(client: SoakClient, sessionId: string, lane: string, frame: WatchCommand): Promise<WatchReply> {
  const sentAt = Date.now();
  let lastProblem = "";
  while (Date.now() < client.retryDeadline(sentAt, COMMAND_WINDOW_MS)) {
    let socket: WatchClient | undefined;
    try {
      socket = await openLaneWatch(client.baseUrl, client.token, sessionId, lane);
      socket.ws.send(JSON.stringify(frame));
      const read = await socket.until((message) => message.type === "reply" && message.id === frame.id);
      const reply = read.at(-1);
      const retryAfter = inProgressFor(reply);
      if (retryAfter === undefined && reply?.type === "reply") return reply;
      // The first send of this id is still being answered (perhaps cut off by a kill): as over
      // REST, ask again after the time the reply names.
      client.noteInProgress();
      lastProblem = `IdempotencyInProgress ${JSON.stringify(reply).slice(0, 200)}`;
      await sleep(Math.min(10, retryAfter ?? 1) * 1000);
    } catch (error) {
      lastProblem = error instanceof Error ? error.message : String(error);
    } finally {
      await socket?.close().catch(() => undefined);
    }
    await sleep(300);
  }
  throw new Error(`socket ${frame.type} ${frame.id} on ${sessionId}/${lane}: no reply within ${COMMAND_WINDOW_MS} ms after the last kill (last: ${lastProblem})`);
}

/** `details.retryAfterSeconds` of a reply refusing a repeated id as still in progress; undefined for any other reply. */
function inProgressFor(reply: unknown): number | undefined {
  if (typeof reply !== "object" || reply === null || !("body" in reply)) return undefined;
  const body = reply.body;
  if (typeof body !== "object" || body === null || !("error" in body) || typeof body.error !== "object" || body.error === null) return undefined;
  const error = body.error;
  if (!("code" in error) || error.code !== "IdempotencyInProgress") return undefined;
  const details = "details" in error && typeof error.details === "object" && error.details !== null ? error.details : {};
  return "retryAfterSeconds" in details && typeof details.retryAfterSeconds === "number" ? details.retryAfterSeconds : 1;
}
