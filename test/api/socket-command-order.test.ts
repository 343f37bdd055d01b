import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { laneSetup, slowStep, useScript } from "./lane-helpers.ts";
import { connect, expectSnapshot, type Client, type Received } from "./watch-helpers.ts";

// docs/api-watch.md "Commands on the socket": a lane socket starts work with `prompt`, `queue` and
// `abort` frames. A socket is one ordered channel: a client that sends a prompt and then, at once,
// an abort (a chat page's stop button pressed right after send) means to abort that prompt's run.

const ReplySchema = v.object({ type: v.literal("reply"), id: v.string(), status: v.number(), body: v.unknown() });

async function replyTo(client: Client<unknown>, id: string, seen: Received<unknown>[]): Promise<v.InferOutput<typeof ReplySchema>> {
  for (;;) {
    const message = await client.next();
    seen.push(message);
    const reply = v.safeParse(ReplySchema, message);
    if (reply.success && reply.output.id === id) return reply.output;
  }
}

describe("commands on one lane socket", { timeout: 60_000 }, () => {
  it("an abort sent right after a prompt on the same socket aborts that prompt's run", async () => {
    const setup = await laneSetup("rvcmdord");
    await useScript(setup, [slowStep(200)]);
    const client = await connect<unknown>(`${setup.lanePath}/watch`, setup.key);
    await expectSnapshot(client);
    const seen: Received<unknown>[] = [];
    // A first refused command takes the session's request lease, so the abort below needs no tenant call.
    client.send(JSON.stringify({ type: "abort", id: "warm" }));
    expect((await replyTo(client, "warm", seen)).status).toBe(422);

    client.send(JSON.stringify({ type: "prompt", id: "p1", prompt: "a long answer" }));
    client.send(JSON.stringify({ type: "abort", id: "a1" }));
    const abortReply = await replyTo(client, "a1", seen);
    const promptReply = seen.map((message) => v.safeParse(ReplySchema, message)).find((parsed) => parsed.success && parsed.output.id === "p1");
    const prompt = promptReply?.success ? promptReply.output : await replyTo(client, "p1", seen);
    expect(prompt.status).toBe(202);
    const operationId = v.parse(v.object({ operationId: v.string() }), prompt.body).operationId;

    const settled = await call(`${setup.lanePath}/operations/${operationId}?wait=30`, { token: setup.key });
    const view = await settled.json<{ state: string; result?: { status: string } }>();
    client.ws.close();
    // The abort was sent after the prompt on the same socket: it must reach the run, not find the lane idle.
    expect({ abort: abortReply.status, run: view.result?.status }).toEqual({ abort: 200, run: "aborted" });
  });
});
