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
  const deadline = Date.now() + COMMAND_WINDOW_MS;
  let lastProblem = "";
  while (Date.now() < deadline) {
    let socket: WatchClient | undefined;
    try {
      socket = await openLaneWatch(client.baseUrl, client.token, sessionId, lane);
      socket.ws.send(JSON.stringify(frame));
      const read = await socket.until((message) => message.type === "reply" && message.id === frame.id);
      const reply = read.at(-1);
      if (reply?.type === "reply") return reply;
    } catch (error) {
      lastProblem = error instanceof Error ? error.message : String(error);
    } finally {
      await socket?.close().catch(() => undefined);
    }
    await sleep(300);
  }
  throw new Error(`socket ${frame.type} ${frame.id} on ${sessionId}/${lane}: no reply within ${COMMAND_WINDOW_MS} ms (last: ${lastProblem})`);
}
