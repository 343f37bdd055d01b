import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readAttachment } from "../../durable-objects/session/watch/watch-flow.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { WATCH_ACK_EVERY_BYTES, WATCH_MESSAGE_BURST } from "../../schema/watch.ts";
import { connect, expectSnapshot, watchSetup, type Client } from "./watch-helpers.ts";

// Acknowledgements and the per-socket message rate (docs/api-watch.md "Acknowledgements"): a
// client that acknowledges every 1 MiB, as the SDK does, while receiving faster than 10 MiB/s must
// not be closed 1008 for it. An acknowledgement that moves the window on is not counted; a
// repeated one still is. Receiving hundreds of MiB here would take long, so the socket's sent-byte
// counter is raised in its attachment (what the object restores a socket's flow from).

const RESNAPSHOT = JSON.stringify({ type: "resnapshot" });

/** Adds `bytes` to what the server counts as sent on the lane's only watch socket, and restarts the object. */
async function pretendSent(stub: Parameters<typeof evictDurableObject>[0], bytes: number): Promise<void> {
  await runInDurableObject(stub, (_instance: SessionObject, state) => {
    const [socket] = state.getWebSockets("lane:main");
    const attachment = socket && readAttachment(socket);
    if (!socket || !attachment) throw new Error("no watch socket");
    socket.serializeAttachment({ ...attachment, sent: attachment.sent + bytes });
  });
  await evictDurableObject(stub);
}

async function answered(client: Client<unknown>): Promise<void> {
  client.send(RESNAPSHOT);
  await expectSnapshot(client);
}

describe("watch acknowledgements and the message rate", { timeout: 60_000 }, () => {
  it("keeps open a socket that sends many times the message burst of advancing acknowledgements at once", async () => {
    const { key, stub, sessionPath } = await watchSetup("ackrate_adv");
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(client);
    const received = client.receivedBytes();
    const acks = 3 * WATCH_MESSAGE_BURST;
    await pretendSent(stub, acks * WATCH_ACK_EVERY_BYTES);
    // What the SDK sends while receiving fast: one acknowledgement per MiB.
    for (let i = 1; i <= acks; i++) client.send(JSON.stringify({ type: "ack", bytes: received + i * WATCH_ACK_EVERY_BYTES }));
    // Answered after all of them: every acknowledgement was handled and the socket is open.
    await answered(client);
    client.ws.close(1000);
  });

  it("still closes 1008 a socket that repeats one acknowledgement past the burst", async () => {
    const { key, sessionPath } = await watchSetup("ackrate_dup");
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(client);
    client.ack();
    for (let i = 0; i < 3 * WATCH_MESSAGE_BURST; i++) client.ack();
    const close = await client.closed();
    expect(close.code).toBe(1008);
    expect(close.reason).toMatch(/rate/i);
  });
});
