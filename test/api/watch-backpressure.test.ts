import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readAttachment } from "../../durable-objects/session/watch/watch-flow.ts";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { WATCH_MAX_SOCKET_AGE_MS, WATCH_MESSAGE_BURST, WATCH_UNACKED_WINDOW_BYTES } from "../../schema/watch.ts";
import { connect, expectSnapshot, fillLane, isRunEnd, prompt, settled, watchSetup, type Client } from "./watch-helpers.ts";

// Slow consumers are bounded in the protocol (docs/api-watch.md "Acknowledgements"): workerd gives
// no drain signal on server sockets, so the server counts the bytes it sent on each socket and the
// client acknowledges what it received. A socket that lets too much go unacknowledged is closed
// 1013; client messages are rate limited per socket (1008). The lane here holds about 2 MiB of
// entries, so each snapshot is about 2 MiB.

const RESNAPSHOT = JSON.stringify({ type: "resnapshot" });

/** Asks for snapshots one at a time, never acknowledging, until the server closes the socket (≤ `max` requests). */
async function resnapshotUntilClosed(client: Client<LaneSnapshot>, max: number): Promise<{ snapshots: number; close: { code: number; reason: string } }> {
  let snapshots = 0;
  const close = client.closed();
  for (let i = 0; i < max; i++) {
    try {
      client.send(RESNAPSHOT);
      await client.until((message) => message.type === "snapshot");
      snapshots++;
    } catch {
      break;
    }
  }
  return { snapshots, close: await close };
}

async function bigLane(prefix: string) {
  const setup = await watchSetup(prefix);
  await fillLane(setup.stub, "main", 8, 256 * 1024);
  return setup;
}

describe("watch backpressure", { timeout: 60_000 }, () => {
  it("closes a watcher that never acknowledges with 1013 within 100 resnapshot requests, while an acknowledging watcher keeps receiving", async () => {
    const { key, stub, sessionPath } = await bigLane("bp_slow");
    const slow = await connect(`${sessionPath}/lanes/main/watch`, key);
    const healthy = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(slow);
    await expectSnapshot(healthy);
    healthy.ack();
    const snapshotBytes = slow.receivedBytes();

    const { snapshots, close } = await resnapshotUntilClosed(slow, 100);
    expect(close.code).toBe(1013);
    expect(snapshots).toBeLessThan(100);
    // What the server let go unacknowledged: at most the window plus the one message that crossed it.
    expect(slow.receivedBytes()).toBeLessThanOrEqual(WATCH_UNACKED_WINDOW_BYTES + snapshotBytes);

    // The other socket of the same object is unaffected: it still gets a whole run.
    const runId = await prompt(stub, "main", "still there?");
    const received = await healthy.until(isRunEnd(runId));
    expect(received.some((message) => message.type === "event" && message.event.type === "run_start")).toBe(true);
    await settled(stub, "main", runId);
    healthy.ws.close(1000);
  });

  it("keeps a watcher that acknowledges open across many times the bound of traffic", async () => {
    const { key, sessionPath } = await bigLane("bp_honest");
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(client);
    for (let i = 0; i < 24; i++) {
      client.ack();
      client.send(RESNAPSHOT);
      await expectSnapshot(client);
    }
    // 25 snapshots of about 2 MiB each: far past the window, and still open.
    expect(client.receivedBytes()).toBeGreaterThan(2 * WATCH_UNACKED_WINDOW_BYTES);
    client.ack();
    client.send(RESNAPSHOT);
    await expectSnapshot(client);
    client.ws.close(1000);
  });

  it("counts unacknowledged bytes across an eviction: the watcher is still closed 1013", async () => {
    const { key, stub, sessionPath } = await bigLane("bp_evict");
    const slow = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(slow);
    const snapshotBytes = slow.receivedBytes();
    for (let i = 0; i < 5; i++) {
      slow.send(RESNAPSHOT);
      await expectSnapshot(slow);
    }
    // The object forgets everything in memory; the socket and its attachment survive.
    await evictDurableObject(stub);
    const { close } = await resnapshotUntilClosed(slow, 100);
    expect(close.code).toBe(1013);
    // The bytes sent before the eviction still count: the window did not start again from zero.
    expect(slow.receivedBytes()).toBeLessThanOrEqual(WATCH_UNACKED_WINDOW_BYTES + snapshotBytes);
  });

  it("answers a burst of resnapshot requests with fewer snapshots than requests (coalesced)", async () => {
    const { key, sessionPath } = await bigLane("bp_burst");
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(client);
    client.ack();
    for (let i = 0; i < 40; i++) client.send(RESNAPSHOT);
    // A marker after the burst: once its answer arrives, every earlier request was handled.
    await expectSnapshot(client);
    let snapshots = 1;
    client.ack();
    client.send("ping");
    const rest = await client.until((message) => message.type === "text");
    snapshots += rest.filter((message) => message.type === "snapshot").length;
    expect(snapshots).toBeGreaterThanOrEqual(1);
    expect(snapshots).toBeLessThan(40);
    client.ws.close(1000);
  });

  it("closes a socket that sends messages faster than the per-socket rate limit with 1008", async () => {
    const { key, sessionPath } = await watchSetup("bp_rate");
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(client);
    for (let i = 0; i < 5 * WATCH_MESSAGE_BURST; i++) client.send(RESNAPSHOT);
    const close = await client.closed();
    expect(close.code).toBe(1008);
    expect(close.reason).toMatch(/rate/i);
  });

  it("closes a socket that acknowledges more bytes than it was sent with 1008", async () => {
    const { key, sessionPath } = await watchSetup("bp_overack");
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(client);
    client.send(JSON.stringify({ type: "ack", bytes: client.receivedBytes() + 1 }));
    const close = await client.closed();
    expect(close.code).toBe(1008);
    expect(close.reason).toMatch(/acknowledg/i);
  });

  it("closes a socket past its maximum age with 1001 when its next message is due", async () => {
    const { key, stub, sessionPath } = await watchSetup("bp_age");
    const old = await connect(`${sessionPath}/lanes/main/watch`, key);
    const young = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(old);
    await expectSnapshot(young);
    // Age one socket's attachment (as a day of hibernation would), then restart the object.
    await runInDurableObject(stub, (_instance: SessionObject, state) => {
      const [first] = state.getWebSockets("lane:main");
      const attachment = first && readAttachment(first);
      if (!first || !attachment) throw new Error("no watch socket");
      first.serializeAttachment({ ...attachment, openedAt: Date.now() - WATCH_MAX_SOCKET_AGE_MS - 1000 });
    });
    await evictDurableObject(stub);
    const runId = await prompt(stub, "main", "who is still here?");
    await settled(stub, "main", runId);
    const first = await Promise.race([
      old.closed().then((close) => ({ close, survivor: young })),
      young.closed().then((close) => ({ close, survivor: old })),
    ]);
    expect(first.close.code).toBe(1001);
    await first.survivor.until(isRunEnd(runId));
    first.survivor.ws.close(1000);
  });
});
