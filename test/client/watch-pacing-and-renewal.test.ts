import { exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { ApiRequestError, createClient, watchLane, type FetchLike, type LaneWatchUpdate } from "../../client/index.ts";
import { PACED_BURST } from "../../client/watch-pacer.ts";
import { WATCH_MESSAGE_BURST } from "../../schema/watch.ts";
import { newTenant } from "../api/helpers.ts";
import { FakeSocket, WorkerdWebSocket, settled } from "./sockets.ts";

// client/README.md "watchLane": the SDK paces its commands under the socket's message rate (a
// burst of 100, then 10 a second, else the server closes it 1008 and the watch ends), renews a
// browser token through a `key` function when the server closes a socket whose token expired,
// and gives up the REST read that classifies a failed connection after 10 s (then retries).

const BASE_URL = "http://api.test";
const appFetch: FetchLike = (input, init) => exports.default.fetch(input, init);

describe("watchLane commands and credentials over time", { timeout: 60_000 }, () => {
  beforeEach(() => {
    WorkerdWebSocket.opened = [];
    FakeSocket.reset();
  });

  it("a burst of commands beyond the socket's rate is paced: each is answered and the watch stays open", async () => {
    const { key } = await newTenant("wpace_burst");
    const client = createClient({ baseUrl: BASE_URL, key, fetch: appFetch });
    const { id } = await client.sessions.create();
    await client.lanes.put(id, "main");
    const handle = client.watchLane(id, "main", { WebSocket: WorkerdWebSocket });
    await handle.ready;
    const statuses: string[] = [];
    handle.on((update: LaneWatchUpdate) => update.type === "status" && statuses.push(update.status));
    // More than the server's burst at once: an abort on an idle lane is refused on its own (409).
    const answers = await Promise.all(Array.from({ length: WATCH_MESSAGE_BURST + 20 }, () => settled(handle.abort())));
    for (const answer of answers) expect(answer).toBeInstanceOf(ApiRequestError);
    const codes = new Set(answers.map((answer) => (answer instanceof ApiRequestError ? answer.code : "other")));
    expect([...codes].every((code) => code === "NoActiveOperation" || code === "RateLimited")).toBe(true);
    expect(handle.status()).toBe("open");
    expect(statuses).toEqual([]);
    expect(WorkerdWebSocket.opened).toHaveLength(1);
    handle.close();
  });

  it("holds back what exceeds its own bucket and sends it in time, in order", async () => {
    const handle = watchLane({ baseUrl: BASE_URL, key: "sk_test", sessionId: "s1", lane: "main", WebSocket: FakeSocket, pingIntervalMs: 0 });
    const socket = FakeSocket.latest().open();
    socket.deliver({ type: "snapshot", seq: 1, snapshot: { transcript: [] } });
    await handle.ready;
    const ids = Array.from({ length: PACED_BURST + 3 }, (_, index) => `c${index}`);
    for (const id of ids) void settled(handle.steer("go", { id }));
    const sentIds = () => socket.sent.map((frame) => (JSON.parse(frame) as { id: string }).id);
    expect(sentIds()).toEqual(ids.slice(0, PACED_BURST));
    // The rest follow as the bucket refills, in the order they were sent.
    while (socket.sent.length < ids.length) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sentIds()).toEqual(ids);
    handle.close();
  });

  it("a key function renews an expired browser token: the watch reconnects with a fresh one and misses nothing", async () => {
    const { key } = await newTenant("wpace_renew");
    const backend = createClient({ baseUrl: BASE_URL, key, fetch: appFetch });
    const { id } = await backend.sessions.create();
    await backend.lanes.put(id, "main");
    const minted: string[] = [];
    const fresh = async (): Promise<string> => {
      // The first token lives one second; the renewed one five minutes.
      const { token } = await backend.sessions.createBrowserToken(id, { scopes: ["watch"], lanes: ["main"], ttlSeconds: minted.length === 0 ? 1 : 300 });
      minted.push(token);
      return token;
    };
    const handle = watchLane({ baseUrl: BASE_URL, key: fresh, sessionId: id, lane: "main", WebSocket: WorkerdWebSocket, fetch: appFetch, backoff: { initialMs: 10, maxMs: 20 } });
    await handle.ready;
    expect(WorkerdWebSocket.opened[0]?.protocol).toBe(`bearer.${minted[0]}`);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    // The first event after the expiry closes the socket (1008); the watch asks for a fresh token.
    const written = await backend.lanes.append(id, "main", { customType: "note", data: "after the expiry" });
    for (let i = 0; i < 400 && !handle.snapshot()?.transcript.some((entry) => entry.id === written.entryId); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(handle.snapshot()?.transcript.map((entry) => entry.id)).toContain(written.entryId);
    expect(handle.status()).toBe("open");
    expect(minted).toHaveLength(2);
    expect(WorkerdWebSocket.opened.at(-1)?.protocol).toBe(`bearer.${minted[1]}`);
    handle.close();
  });

  it("a key function whose credential is refused ends the watch with the API's code", async () => {
    const { key } = await newTenant("wpace_refused");
    const client = createClient({ baseUrl: BASE_URL, key, fetch: appFetch });
    const { id } = await client.sessions.create();
    await client.lanes.put(id, "main");
    const handle = watchLane({ baseUrl: BASE_URL, key: async () => "sk_not_a_key", sessionId: id, lane: "main", WebSocket: WorkerdWebSocket, fetch: appFetch, backoff: { initialMs: 5, maxMs: 10 } });
    expect(await settled(handle.ready)).toMatchObject({ kind: "ended", code: "Unauthenticated", status: 401 });
  });

  it("the read that classifies a failed connection gives up after 10 s; the watch then retries", async () => {
    const signals: AbortSignal[] = [];
    const hanging: FetchLike = (_input, init) =>
      new Promise((_resolve, reject) => {
        const signal = init?.signal;
        if (!signal) return;
        signals.push(signal);
        signal.addEventListener("abort", () => reject(signal.reason));
      });
    const statuses: LaneWatchUpdate[] = [];
    const handle = watchLane({ baseUrl: BASE_URL, key: "sk_test", sessionId: "s1", lane: "main", WebSocket: FakeSocket, fetch: hanging, backoff: { initialMs: 5, maxMs: 10 } });
    handle.on((update) => update.type === "status" && statuses.push(update));
    FakeSocket.latest().failToConnect();
    while (signals.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const [signal] = signals;
    await new Promise((resolve) => signal?.addEventListener("abort", resolve));
    while (!statuses.some((update) => update.type === "status" && update.status === "reconnecting")) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(handle.status()).not.toBe("closed");
    handle.close();
  });
});
