import { describe, expect, it } from "vitest";
import { WatchFlow } from "../../durable-objects/session/watch/watch-flow.ts";
import { WATCH_ACK_EVERY_BYTES, WATCH_MESSAGE_BURST } from "../../schema/watch.ts";

// A watch socket's client messages are rate limited (docs/api-watch.md "Acknowledgements"), but an
// acknowledgement that moves the window on is what the protocol asks of every client: it takes
// nothing from the bucket, so a fast reader is never closed 1008 for acknowledging. Anything else
// (commands, pings, resnapshots, repeated or tiny acknowledgements) counts as before.

const NOW = 1_700_000_000_000;
const STEP = WATCH_ACK_EVERY_BYTES;

/** A real socket of the runtime: WatchFlow keeps its state in the socket's attachment. */
function runtimeSocket(): WebSocket {
  const [, server] = Object.values(new WebSocketPair());
  if (!server) throw new Error("no socket");
  return server;
}

function openFlow(sent: number): WatchFlow {
  const flow = WatchFlow.open(runtimeSocket(), { kind: "lane", lane: "main" }, "key", NOW);
  flow.sent(sent);
  return flow;
}

/** A client message that is an acknowledgement of `bytes`: admitted, then applied (as the socket does). */
function ack(flow: WatchFlow, bytes: number, now = NOW): boolean {
  if (!flow.admitMessage(now, bytes)) return false;
  expect(flow.acknowledge(bytes)).toBe("ok");
  return true;
}

describe("WatchFlow message rate", () => {
  it("admits many times the burst of acknowledgements that each advance by the SDK's step, all at once", () => {
    const count = 3 * WATCH_MESSAGE_BURST;
    const flow = openFlow(count * STEP);
    for (let i = 1; i <= count; i++) expect(ack(flow, i * STEP), `ack ${i}`).toBe(true);
    // The bucket is still full: other messages get the whole burst.
    for (let i = 0; i < WATCH_MESSAGE_BURST; i++) expect(flow.admitMessage(NOW)).toBe(true);
    expect(flow.admitMessage(NOW)).toBe(false);
  });

  it("admits for free an acknowledgement of everything sent, even a small one", () => {
    const flow = openFlow(300);
    for (let i = 0; i < WATCH_MESSAGE_BURST; i++) expect(flow.admitMessage(NOW)).toBe(true);
    expect(ack(flow, 300)).toBe(true);
    // The same acknowledgement again moves nothing: it counts, and the bucket is empty.
    expect(flow.admitMessage(NOW, 300)).toBe(false);
  });

  it("counts repeated acknowledgements against the rate", () => {
    const flow = openFlow(10 * STEP);
    expect(ack(flow, STEP)).toBe(true);
    for (let i = 0; i < WATCH_MESSAGE_BURST; i++) expect(ack(flow, STEP), `repeat ${i}`).toBe(true);
    expect(flow.admitMessage(NOW, STEP)).toBe(false);
  });

  it("counts acknowledgements that advance by less than the step and do not reach what was sent", () => {
    const flow = openFlow(10 * STEP);
    for (let i = 1; i <= WATCH_MESSAGE_BURST; i++) expect(ack(flow, i * 1024), `tiny ack ${i}`).toBe(true);
    expect(flow.admitMessage(NOW, (WATCH_MESSAGE_BURST + 1) * 1024)).toBe(false);
  });

  it("counts an acknowledgement beyond what was sent (which the socket then refuses)", () => {
    const flow = openFlow(STEP);
    for (let i = 0; i < WATCH_MESSAGE_BURST; i++) expect(flow.admitMessage(NOW)).toBe(true);
    expect(flow.admitMessage(NOW, 4 * STEP)).toBe(false);
    expect(flow.acknowledge(4 * STEP)).toBe("beyond_sent");
  });

  it("counts every other message: the burst, then refilled over time", () => {
    const flow = openFlow(0);
    for (let i = 0; i < WATCH_MESSAGE_BURST; i++) expect(flow.admitMessage(NOW)).toBe(true);
    expect(flow.admitMessage(NOW)).toBe(false);
    expect(flow.admitMessage(NOW + 1000)).toBe(true);
  });
});
