import { beforeEach, describe, expect, it } from "vitest";
import { ApiRequestError, watchLane } from "../../client/index.ts";
import { eventually, FakeSocket, laneSnapshot, SCRIPTED_WATCH } from "./sockets.ts";

// Socket commands (docs/api-watch.md "Commands on the socket") across a reconnect and with a
// repeated client id: a command resent while its first send is still being answered (409
// IdempotencyInProgress) waits and is sent again, never reported failed; an id already waiting is
// refused at once, so that every command's promise settles.

function open() {
  return watchLane({ ...SCRIPTED_WATCH, fetch: async () => Response.json({ lane: "main" }) });
}

const track = <T>(promise: Promise<T>) => {
  const state: { settled?: "resolved" | "rejected"; value?: unknown } = {};
  promise.then(
    (value) => Object.assign(state, { settled: "resolved", value }),
    (error: unknown) => Object.assign(state, { settled: "rejected", value: error }),
  );
  return state;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("watchLane's commands", () => {
  beforeEach(() => FakeSocket.reset());

  it("a command resent after a reconnect and answered 409 IdempotencyInProgress is sent again after the wait, and settles with its answer", async () => {
    const handle = open();
    const first = FakeSocket.latest().open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
    const prompt = track(handle.prompt("hello", { id: "p1" }));
    expect(first.sent.filter((text) => text.includes('"id":"p1"'))).toHaveLength(1);
    // The socket is lost before the reply; the watch reconnects and sends p1 again.
    first.serverClose(1006);
    await eventually(() => FakeSocket.instances.length === 2, "a second socket");
    const second = FakeSocket.latest().open().deliver({ type: "snapshot", seq: 5, snapshot: laneSnapshot() });
    expect(second.sent.filter((text) => text.includes('"id":"p1"'))).toHaveLength(1);
    // What the server answers while the first send still holds the claim.
    second.deliver({
      type: "reply",
      id: "p1",
      status: 409,
      body: { error: { code: "IdempotencyInProgress", message: "Command p1 is still being answered", details: { retryAfterSeconds: 1 } } },
    });
    await sleep(20);
    expect(prompt.settled).toBeUndefined();
    // After the wait the same frame goes again; its answer settles the command.
    await eventually(() => second.sent.filter((text) => text.includes('"id":"p1"')).length === 2, "p1 sent again");
    second.deliver({ type: "reply", id: "p1", status: 202, body: { operationId: "op-1", kind: "run", startedAt: 1 } });
    await eventually(() => prompt.settled !== undefined, "the answer");
    expect(prompt).toMatchObject({ settled: "resolved", value: { operationId: "op-1" } });
    handle.close();
  });

  it("a command answered 429 RateLimited rejects with retryAfter from the reply's details.retryAfterSeconds", async () => {
    const handle = open();
    const socket = FakeSocket.latest().open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
    const limited = track(handle.prompt("hello", { id: "q1" }));
    const malformed = track(handle.steer("again", { id: "q2" }));
    const quota = (retryAfterSeconds: unknown) => ({ error: { code: "RateLimited", message: "The tenant's request quota is used up", details: { quota: "requestsPerMinute", retryAfterSeconds } } });
    socket.deliver({ type: "reply", id: "q1", status: 429, body: quota(7) });
    socket.deliver({ type: "reply", id: "q2", status: 429, body: quota("soon") });
    await eventually(() => limited.settled !== undefined && malformed.settled !== undefined, "both answers");
    expect(limited.settled).toBe("rejected");
    expect(limited.value).toBeInstanceOf(ApiRequestError);
    expect(limited.value).toMatchObject({ status: 429, code: "RateLimited", retryAfter: 7, details: { retryAfterSeconds: 7 } });
    // A wait that is no positive number of seconds gives none.
    expect(malformed.settled).toBe("rejected");
    expect(malformed.value).toMatchObject({ status: 429, code: "RateLimited" });
    expect((malformed.value as ApiRequestError).retryAfter).toBeUndefined();
    handle.close();
  });

  it("a second command under an id still waiting is refused at once and sends nothing; the first settles with its answer", async () => {
    const handle = open();
    const socket = FakeSocket.latest().open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
    const a = track(handle.prompt("first", { id: "dup" }));
    const b = track(handle.prompt("second", { id: "dup" }));
    await sleep(5);
    expect(b.settled).toBe("rejected");
    expect(socket.sent.filter((text) => text.includes('"id":"dup"'))).toHaveLength(1);
    socket.deliver({ type: "reply", id: "dup", status: 202, body: { operationId: "op-first", kind: "run", startedAt: 1 } });
    await eventually(() => a.settled !== undefined, "the first answer");
    expect(a).toMatchObject({ settled: "resolved", value: { operationId: "op-first" } });
    // Answered, the id is free again.
    const c = track(handle.prompt("third", { id: "dup" }));
    expect(socket.sent.filter((text) => text.includes('"id":"dup"'))).toHaveLength(2);
    handle.close();
    await eventually(() => c.settled !== undefined, "the close to settle it");
  });
});
