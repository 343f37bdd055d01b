import { beforeEach, describe, expect, it } from "vitest";
import {
  isRebase,
  laneWatchUrl,
  reduceLaneSnapshot,
  watchLane,
  type HarnessEvent,
  type LaneSnapshot,
  type LaneWatchUpdate,
  type WatchError,
  type WatchLaneOptions,
} from "../../client/index.ts";
import { WATCH_ACK_EVERY_BYTES } from "../../schema/watch.ts";
import { eventually, FakeSocket, laneSnapshot, SCRIPTED_WATCH } from "./sockets.ts";

// watchLane against a scripted socket: the exact message sequences (snapshot, events, gaps,
// rebases, closes) are crafted here; the live counterpart is watch-live.test.ts.

const RESNAPSHOT = JSON.stringify({ type: "resnapshot" });

const runStart = (runId: string, lane = "main"): HarnessEvent => ({ type: "run_start", lane, runId, startedAt: 1 });
const thinking = (value: string): HarnessEvent => ({ type: "config_update", lane: "main", property: "thinkingLevel", value, previous: "off" });
const runEnd = (runId: string): HarnessEvent => ({ type: "run_end", lane: "main", runId, status: "completed", fromTipId: null, tipId: null, endedAt: 2 });
const navigationEnd: HarnessEvent = { type: "navigation_end", lane: "main", runId: "nav", status: "completed", fromTipId: null, tipId: "e1", endedAt: 3 };

function fold(snapshot: LaneSnapshot, events: HarnessEvent[]): LaneSnapshot {
  return events.reduce((acc: LaneSnapshot, event) => {
    const next = reduceLaneSnapshot(acc, event);
    if (isRebase(next)) throw new Error("unexpected rebase");
    return next;
  }, snapshot);
}

/** What the scripted REST side answers `GET …/lanes/{lane}` with (a failed connection is classified by it). */
let laneRead: () => Response = () => Response.json({ lane: "main" });
const laneReads: string[] = [];
const scriptedFetch = async (input: string): Promise<Response> => {
  laneReads.push(input);
  return laneRead();
};

function watch(extra: Partial<WatchLaneOptions> = {}) {
  const updates: LaneWatchUpdate[] = [];
  const errors: WatchError[] = [];
  const handle = watchLane({
    ...SCRIPTED_WATCH,
    fetch: scriptedFetch,
    onError: (error) => errors.push(error),
    ...extra,
  });
  handle.on((update) => updates.push(update));
  return { handle, updates, errors, socket: FakeSocket.latest() };
}

describe("watchLane (scripted socket)", () => {
  beforeEach(() => {
    FakeSocket.reset();
    laneRead = () => Response.json({ lane: "main" });
    laneReads.length = 0;
  });

  it("connects to the lane's ws URL with the bearer subprotocol, resolves ready with the snapshot and folds events", async () => {
    const events: { type: string; seq: number }[] = [];
    const { handle, socket, errors } = watch({ onEvent: (event, _snapshot, seq) => events.push({ type: event.type, seq }) });
    // The SDK asks for batch frames (several events due together in one frame).
    expect(socket.url).toBe("ws://api.test/v1/sessions/s1/lanes/main/watch?batch=true");
    expect(socket.protocols).toEqual(["bearer.sk_t_key"]);
    expect(laneWatchUrl("https://x.example/api", "a b", "main")).toBe("wss://x.example/api/v1/sessions/a%20b/lanes/main/watch");
    expect(handle.snapshot()).toBeUndefined();
    const first = laneSnapshot();
    socket.open().deliver({ type: "snapshot", seq: 10, snapshot: first });
    await expect(handle.ready).resolves.toStrictEqual(first);
    // Seqs are per session: a lane stream skips other events' numbers (11, 13, 14), which is no gap.
    const received = [runStart("r1"), runStart("r9", "other"), thinking("high"), runEnd("r1")];
    received.forEach((event, i) => socket.deliver({ type: "event", seq: 12 + i * 3, event }));
    expect(handle.snapshot()).toStrictEqual(fold(first, received));
    expect(handle.snapshot()).toMatchObject({ configuration: { thinkingLevel: "high" }, lastResult: { operationId: "r1", status: "completed" }, operation: null });
    expect(handle.seq()).toBe(21);
    expect(events).toEqual([
      { type: "run_start", seq: 12 },
      { type: "run_start", seq: 15 },
      { type: "config_update", seq: 18 },
      { type: "run_end", seq: 21 },
    ]);
    expect(socket.resnapshots()).toBe(0);
    expect(errors).toEqual([]);
    handle.close();
    expect(socket.closedWith).toEqual({ code: 1000, reason: "client closed" });
    expect(handle.status()).toBe("closed");
  });

  it("a batch frame folds its messages in order, exactly as if each had arrived alone", () => {
    const events: { type: string; seq: number }[] = [];
    const { handle, socket, errors } = watch({ onEvent: (event, _snapshot, seq) => events.push({ type: event.type, seq }) });
    const first = laneSnapshot();
    socket.open().deliver({ type: "snapshot", seq: 10, snapshot: first });
    const received = [runStart("r1"), thinking("high"), runEnd("r1")];
    socket.deliver({ type: "batch", messages: received.map((event, i) => ({ type: "event", seq: 11 + i * 2, event })) });
    expect(handle.snapshot()).toStrictEqual(fold(first, received));
    expect(handle.seq()).toBe(15);
    expect(events).toEqual([
      { type: "run_start", seq: 11 },
      { type: "config_update", seq: 13 },
      { type: "run_end", seq: 15 },
    ]);
    // A seq that does not increase inside a batch is a gap like anywhere else: one resnapshot, the rest dropped.
    socket.deliver({ type: "batch", messages: [{ type: "event", seq: 16, event: thinking("low") }, { type: "event", seq: 16, event: thinking("medium") }, { type: "event", seq: 17, event: thinking("off") }] });
    expect(socket.resnapshots()).toBe(1);
    expect(handle.snapshot()?.configuration.thinkingLevel).toBe("low");
    // An unreadable batch (a message without a seq) is reported, nothing of it folded.
    socket.deliver({ type: "batch", messages: [{ type: "event", event: thinking("high") }] });
    expect(errors.map((error) => error.kind)).toEqual(["protocol"]);
    handle.close();
  });

  it("a seq that does not increase is a gap: one resnapshot, events dropped until the fresh snapshot replaces the replica", () => {
    const { handle, socket, updates } = watch();
    socket.open().deliver({ type: "snapshot", seq: 10, snapshot: laneSnapshot() });
    socket.deliver({ type: "event", seq: 12, event: runStart("r1") });
    socket.deliver({ type: "event", seq: 12, event: thinking("low") });
    expect(socket.sent).toEqual([RESNAPSHOT]);
    // Pending: later events are covered by the coming snapshot; no second request.
    socket.deliver({ type: "event", seq: 9, event: thinking("medium") });
    socket.deliver({ type: "event", seq: 13, event: thinking("high") });
    expect(socket.resnapshots()).toBe(1);
    expect(handle.snapshot()?.configuration.thinkingLevel).toBe("off");
    const fresh = laneSnapshot({ tipId: "e7", configuration: { ...laneSnapshot().configuration, thinkingLevel: "high" } });
    socket.deliver({ type: "snapshot", seq: 13, snapshot: fresh });
    expect(handle.snapshot()).toStrictEqual(fresh);
    socket.deliver({ type: "event", seq: 14, event: runStart("r2") });
    expect(handle.snapshot()?.operation).toMatchObject({ id: "r2", kind: "run" });
    expect(updates.filter((u) => u.type !== "status").map((u) => `${u.type}:${u.seq}`)).toEqual([
      "snapshot:10",
      "event:12",
      "resnapshot:12",
      "snapshot:13",
      "event:14",
    ]);
    expect(updates.find((u) => u.type === "resnapshot")).toMatchObject({ reason: "seq_gap" });
    expect(updates.filter((u) => u.type === "snapshot").map((u) => u.type === "snapshot" && u.reason)).toEqual(["connect", "resnapshot"]);
    handle.close();
  });

  it("with gapRule contiguous, events with a gap (10 → 12) ask for a resnapshot", () => {
    const { handle, socket } = watch({ gapRule: "contiguous" });
    socket.open().deliver({ type: "snapshot", seq: 10, snapshot: laneSnapshot() });
    socket.deliver({ type: "event", seq: 11, event: runStart("r1") });
    expect(socket.sent).toEqual([]);
    socket.deliver({ type: "event", seq: 13, event: thinking("high") });
    expect(socket.sent).toEqual([RESNAPSHOT]);
    expect(handle.snapshot()?.configuration.thinkingLevel).toBe("off");
    expect(handle.snapshot()?.operation?.id).toBe("r1");
    handle.close();
  });

  it("navigation_end is a rebase: the fold stops and a resnapshot is requested", () => {
    const { handle, socket, updates } = watch();
    socket.open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
    socket.deliver({ type: "event", seq: 2, event: navigationEnd });
    expect(socket.sent).toEqual([RESNAPSHOT]);
    expect(updates.at(-1)).toMatchObject({ type: "resnapshot", reason: "rebase", seq: 2, event: { type: "navigation_end" } });
    const moved = laneSnapshot({ tipId: "e1" });
    socket.deliver({ type: "snapshot", seq: 3, snapshot: moved });
    expect(handle.snapshot()).toStrictEqual(moved);
    handle.close();
  });

  it("reconnects after a close with a fresh snapshot; close() stops reconnecting", async () => {
    const { handle, socket, updates } = watch();
    socket.open().deliver({ type: "snapshot", seq: 5, snapshot: laneSnapshot() });
    await handle.ready;
    socket.serverClose(1013, "slow consumer");
    expect(handle.status()).toBe("reconnecting");
    expect(updates.at(-1)).toMatchObject({ type: "status", status: "reconnecting", attempt: 1, code: 1013, reason: "slow consumer" });
    // The replica stays readable while disconnected.
    expect(handle.snapshot()?.tipId).toBeNull();
    await eventually(() => FakeSocket.instances.length === 2, "a second socket");
    const second = FakeSocket.latest();
    expect(second.protocols).toEqual(["bearer.sk_t_key"]);
    const fresh = laneSnapshot({ tipId: "e9" });
    second.open().deliver({ type: "snapshot", seq: 2000, snapshot: fresh });
    expect(handle.snapshot()).toStrictEqual(fresh);
    expect(handle.seq()).toBe(2000);
    second.serverClose(1006);
    handle.close();
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(FakeSocket.instances).toHaveLength(2);
    expect(handle.status()).toBe("closed");
  });

  it("backs off exponentially with jitter up to the cap while connections fail, and resets after a snapshot", async () => {
    const { handle, updates } = watch({ backoff: { initialMs: 8, maxMs: 32 }, random: () => 0.5 });
    const delays = () => updates.flatMap((u) => (u.type === "status" && u.status === "reconnecting" ? [u.delayMs] : []));
    for (let failed = 1; failed <= 4; failed++) {
      await eventually(() => FakeSocket.instances.length === failed, `socket ${failed}`);
      FakeSocket.latest().serverClose(1006);
    }
    // Ceilings 8, 16, 32, 32 (capped); equal jitter at 0.5 → three quarters of each. (Each failed
    // connection is classified by a REST read first, so the last delay comes a moment later.)
    await eventually(() => delays().length === 4, "the fourth reconnect");
    expect(delays()).toEqual([6, 12, 24, 24]);
    await eventually(() => FakeSocket.instances.length === 5, "socket 5");
    FakeSocket.latest().open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
    FakeSocket.latest().serverClose(1006);
    expect(delays().at(-1)).toBe(6);
    handle.close();
  });

  it("a server close 1000 (session deleted) ends the watch; ready rejects when no snapshot came", async () => {
    const { handle, socket, errors } = watch();
    socket.open().serverClose(1000, "Session deleted");
    await expect(handle.ready).rejects.toMatchObject({ name: "WatchError", kind: "ended" });
    expect(handle.status()).toBe("closed");
    expect(errors.map((e) => e.kind)).toEqual(["ended"]);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(FakeSocket.instances).toHaveLength(1);
  });

  it("gives up after backoff.maxAttempts failed connections", async () => {
    const { handle } = watch({ backoff: { initialMs: 1, maxMs: 2, maxAttempts: 2 } });
    for (let n = 1; n <= 3; n++) {
      await eventually(() => FakeSocket.instances.length === n, `socket ${n}`);
      FakeSocket.latest().serverClose(1006);
    }
    await expect(handle.ready).rejects.toMatchObject({ kind: "ended" });
    expect(handle.status()).toBe("closed");
  });

  it("a connection that fails with an error and no close (a refused upgrade on some WebSocket implementations) is a failed attempt: retried, then given up", async () => {
    const { handle, errors } = watch({ backoff: { initialMs: 1, maxMs: 2, maxAttempts: 2 } });
    for (let n = 1; n <= 3; n++) {
      await eventually(() => FakeSocket.instances.length === n, `socket ${n}`);
      FakeSocket.latest().failToConnect();
    }
    await expect(handle.ready).rejects.toMatchObject({ kind: "ended", message: "Gave up after 2 failed connection attempts" });
    expect(handle.status()).toBe("closed");
    expect(errors.filter((error) => error.kind === "socket")).toHaveLength(3);
    // A late close of an abandoned attempt changes nothing.
    FakeSocket.instances[0]?.serverClose(1006);
    expect(FakeSocket.instances).toHaveLength(3);
  });

  it("a connection refused for good (unknown session or lane, a refused key) ends the watch with the API's code after one REST read, without retrying", async () => {
    for (const [status, code] of [
      [404, "SessionNotFound"],
      [404, "UnknownLane"],
      [401, "Unauthenticated"],
      [400, "ValidationFailed"],
    ] as const) {
      FakeSocket.reset();
      laneReads.length = 0;
      laneRead = () => Response.json({ error: { code, message: `refused: ${code}`, requestId: "r" } }, { status });
      const { handle, errors } = watch({ backoff: { initialMs: 1, maxMs: 2 } });
      // Half the refusals look like Node's WebSocket (an error, no close), half like a browser's (a 1006 close).
      if (code === "UnknownLane" || code === "ValidationFailed") FakeSocket.latest().serverClose(1006);
      else FakeSocket.latest().failToConnect();
      await expect(handle.ready).rejects.toMatchObject({ kind: "ended", code, status });
      expect(errors.at(-1)).toMatchObject({ kind: "ended", code, status, message: expect.stringContaining(code) });
      expect(handle.status()).toBe("closed");
      expect(laneReads).toEqual(["http://api.test/v1/sessions/s1/lanes/main"]);
      expect(FakeSocket.instances).toHaveLength(1);
    }
  });

  it("a connection that fails while the lane reads fine, or the read itself fails (429, 5xx, network), is retried", async () => {
    const answers: (() => Response)[] = [
      () => Response.json({ lane: "main" }),
      () => Response.json({ error: { code: "RateLimited", message: "slow down", requestId: "r" } }, { status: 429 }),
      () => Response.json({ error: { code: "Internal", message: "oops", requestId: "r" } }, { status: 500 }),
      () => {
        throw new TypeError("fetch failed");
      },
    ];
    let next = 0;
    laneRead = () => (answers[next++] ?? answers[0] ?? (() => Response.json({})))();
    const { handle } = watch({ backoff: { initialMs: 1, maxMs: 2 } });
    for (let n = 1; n <= answers.length; n++) {
      await eventually(() => FakeSocket.instances.length === n, `socket ${n}`);
      FakeSocket.latest().failToConnect();
    }
    await eventually(() => FakeSocket.instances.length === answers.length + 1, "a fifth attempt");
    FakeSocket.latest().open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
    await expect(handle.ready).resolves.toMatchObject({ lane: "main" });
    expect(laneReads).toHaveLength(answers.length);
    handle.close();
  });

  it("an error on an open socket is reported and the socket kept until it closes", async () => {
    const { handle, socket, errors } = watch();
    socket.open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
    await handle.ready;
    socket.dispatchEvent(new Event("error"));
    expect(errors.map((error) => error.kind)).toEqual(["socket"]);
    expect(handle.status()).toBe("open");
    expect(FakeSocket.instances).toHaveLength(1);
    handle.close();
  });

  it("pings while open, ignores pong, and reports unreadable messages without dropping the socket", async () => {
    const { handle, socket, errors } = watch({ pingIntervalMs: 5 });
    socket.open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
    await eventually(() => socket.sent.includes("ping"), "a ping");
    socket.deliver("pong");
    socket.deliver("not json");
    socket.deliver({ type: "event", seq: "2", event: runStart("r1") });
    expect(errors.map((e) => e.kind)).toEqual(["protocol", "protocol"]);
    expect(handle.status()).toBe("open");
    expect(handle.snapshot()?.operation).toBeNull();
    // A throwing listener is reported, and the replica keeps folding.
    handle.on(() => {
      throw new Error("listener bug");
    });
    socket.deliver({ type: "event", seq: 2, event: runStart("r1") });
    expect(handle.snapshot()?.operation?.id).toBe("r1");
    expect(errors.at(-1)?.kind).toBe("listener");
    handle.close();
    const pings = socket.sent.length;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(socket.sent.length).toBe(pings);
  });

  it("acknowledges the UTF-8 bytes of every server message but pong, each time another megabyte arrived", () => {
    const { socket } = watch();
    socket.open();
    const utf8 = new TextEncoder();
    const messages = [
      JSON.stringify({ type: "snapshot", seq: 1, snapshot: laneSnapshot() }),
      ...Array.from({ length: 12 }, (_, i) => JSON.stringify({ type: "event", seq: i + 2, event: thinking(`é🙂${"x".repeat(200_000)}`) })),
    ];
    let total = 0;
    const expected: string[] = [];
    let acknowledged = 0;
    for (const text of messages) {
      socket.deliver(text);
      socket.deliver("pong");
      total += utf8.encode(text).byteLength;
      if (total - acknowledged >= WATCH_ACK_EVERY_BYTES) {
        acknowledged = total;
        expected.push(JSON.stringify({ type: "ack", bytes: total }));
      }
    }
    expect(expected.length).toBeGreaterThanOrEqual(2);
    expect(socket.sent.filter((text) => text.startsWith('{"type":"ack"'))).toEqual(expected);
  });

  it("a server close 1008 (key revoked, or a refused message) or 1003 ends the watch instead of reconnecting", async () => {
    for (const code of [1008, 1003]) {
      FakeSocket.reset();
      const { handle, socket, errors } = watch();
      socket.open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot() });
      await handle.ready;
      socket.serverClose(code, "The API key was revoked");
      expect(handle.status()).toBe("closed");
      expect(errors.at(-1)).toMatchObject({ kind: "ended", message: expect.stringContaining("revoked") });
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(FakeSocket.instances).toHaveLength(1);
    }
  });

  it("olderEntries() reads the entries before the replica's tail by REST, newest first, page by page", async () => {
    const requests: string[] = [];
    const pages: Record<string, { items: { id: string }[]; nextCursor: string | null }> = {
      "": { items: [{ id: "e3" }, { id: "e2" }], nextCursor: "2" },
      "2": { items: [{ id: "e1" }], nextCursor: null },
    };
    const fetch = async (input: string) => {
      requests.push(input);
      const cursor = new URL(input).searchParams.get("cursor") ?? "";
      return Response.json(pages[cursor]);
    };
    const { handle, socket } = watch({ fetch });
    expect(await handle.olderEntries().next()).toEqual({ done: true, value: undefined });
    socket.open().deliver({ type: "snapshot", seq: 1, snapshot: laneSnapshot({ tipId: "e4", olderEntries: { start: "e3" } }) });
    await handle.ready;
    const ids: string[] = [];
    for await (const entry of handle.olderEntries({ pageSize: 2 })) ids.push(entry.id);
    expect(ids).toEqual(["e3", "e2", "e1"]);
    expect(requests[0]).toBe("http://api.test/v1/sessions/s1/branches/main/entries?start=e3&stopAtType=compaction&limit=2");
    handle.close();
  });
});
