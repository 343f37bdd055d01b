import * as v from "valibot";
import { connect, expectSnapshot, watchSetup, type Client, type Received } from "./watch-helpers.ts";

// A lane socket, and a command sent on it with its reply frame (socket-command-rest-parity.test.ts).

const ReplySchema = v.object({
  type: v.literal("reply"),
  id: v.string(),
  status: v.number(),
  body: v.looseObject({ error: v.optional(v.looseObject({ code: v.string(), details: v.optional(v.record(v.string(), v.unknown())) })) }),
});
export type Reply = v.InferOutput<typeof ReplySchema>;

export function isReply(id: string): (message: Received<unknown>) => boolean {
  return (message) => {
    const reply = v.safeParse(ReplySchema, message);
    return reply.success && reply.output.id === id;
  };
}

/** Sends a command frame and reads until its reply. */
export async function command(client: Client<unknown>, frame: Record<string, unknown> & { id: string }): Promise<{ reply: Reply; before: Received<unknown>[] }> {
  client.send(JSON.stringify(frame));
  const read = await client.until(isReply(frame.id));
  return { reply: v.parse(ReplySchema, read.at(-1)), before: read.slice(0, -1) };
}


export async function laneSocket(prefix: string, lanes: string[] = ["main"]) {
  const setup = await watchSetup(prefix, lanes);
  const client = await connect<unknown>(`${setup.sessionPath}/lanes/main/watch`, setup.key);
  await expectSnapshot(client);
  return { setup, client };
}
