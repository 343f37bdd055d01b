import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchLane, type LaneWatch } from "../../client/watch.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import {
  Api,
  appendSteps,
  createTenant,
  eventsOf,
  fold,
  isEvent,
  openLaneWatch,
  pollUntil,
  readAdminToken,
  scriptedSession,
  settled,
  startRun,
  transcriptText,
  words,
  type WatchClient,
} from "./client-helpers.ts";
import { printServerOutputOnFailure, startDevServer, type DevServer } from "./dev-server.ts";

// docs/api.md section 3–4 and docs/api-watch.md with a real WebSocket client (Node's global
// WebSocket) against `npm start`: the fold of the stream equals the server's snapshot.

describe("watching a lane over a real WebSocket", () => {
  let server: DevServer;
  let api: Api;
  let key: string;
  const sockets: WatchClient[] = [];
  const watches: LaneWatch[] = [];
  beforeAll(async () => {
    server = await startDevServer();
    const tenant = await createTenant(new Api(server.baseUrl, readAdminToken()), "watch");
    api = tenant.api;
    key = tenant.key;
  }, 90_000);
  printServerOutputOnFailure(() => [server]);
  afterAll(async () => {
    for (const watch of watches) watch.close();
    for (const socket of sockets) await socket.close();
    await server?.stop();
  });

  it("snapshot, a steer mid-stream (another turn), an abort mid-stream; the fold equals GET …/snapshot; ping → pong", async () => {
    const sid = "watched";
    await scriptedSession(api, sid);
    const client = await openLaneWatch(server.baseUrl, key, sid, "main");
    sockets.push(client);
    // The 101 selected the offered bearer subprotocol (a standard client fails the handshake otherwise).
    expect(client.ws.protocol).toBe(`bearer.${key}`);

    const first = await client.next();
    if (first.type !== "snapshot") throw new Error(`Expected a snapshot first, got ${JSON.stringify(first).slice(0, 200)}`);
    expect(first.snapshot).toMatchObject({ lane: "main", tipId: null, transcript: [], operation: null, queues: [], faulted: false });
    expect(first.snapshot.configuration.model).toEqual({ provider: "scripted", modelId: "script" });

    // ping → pong while idle (answered by the runtime's auto-response).
    client.ws.send("ping");
    expect(await client.next()).toEqual({ type: "text", text: "pong" });

    // A slow first turn; a steer POSTed while it streams makes the run take a second turn.
    await appendSteps(api, sid, [{ text: words(50), chunkMs: 40 }, { text: "second turn" }]);
    const steered = await startRun(api, sid, "go");
    await client.until(isEvent("message_update", steered));
    const steer = await api.expect<{ entryId: string }>(201, "POST", `/v1/sessions/${sid}/lanes/main/queue`, {
      body: { kind: "steer", message: "also mention the weather" },
    });
    expect(typeof steer.entryId).toBe("string");
    expect(await settled(api, sid, steered)).toMatchObject({ operationId: steered, status: "completed" });
    const steeredEvents = eventsOf(await client.until(isEvent("run_end", steered)));
    expect(steeredEvents.filter((e) => e.event.type === "message_update").length).toBeGreaterThan(0);

    // Another slow run, aborted mid-stream with the lane convenience.
    await appendSteps(api, sid, [{ text: words(50, "slow"), chunkMs: 40 }]);
    const aborted = await startRun(api, sid, "stop me");
    await client.until(isEvent("message_update", aborted));
    // The convenience waits (default 10 s) to report the reconciled record (docs/api-lanes.md).
    const abort = await api.expect<{ operationId: string; newlyRequested: boolean; steer: unknown[]; followUp: unknown[]; record?: unknown }>(
      200,
      "POST",
      `/v1/sessions/${sid}/lanes/main/abort`,
    );
    expect(abort).toMatchObject({ operationId: aborted, newlyRequested: true, steer: [], followUp: [] });
    const record = await settled(api, sid, aborted);
    expect(record).toMatchObject({ operationId: aborted, status: "aborted" });
    if (abort.record !== undefined) expect(abort.record).toEqual(record);
    await client.until(isEvent("run_end", aborted));

    // Both settled: the server's snapshot, then a resnapshot as a barrier (every event with a
    // smaller seq was sent before it on this socket).
    const rest = await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
    client.ws.send(JSON.stringify({ type: "resnapshot" }));
    const resnapshot = (await client.until((message) => message.type === "snapshot")).at(-1);
    if (resnapshot?.type !== "snapshot") throw new Error("no resnapshot");
    expect(resnapshot.seq).toBeGreaterThanOrEqual(rest.seq);

    const received = eventsOf(client.log.slice(1, client.log.indexOf(resnapshot)));
    const seqs = received.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs[0]).toBeGreaterThan(first.seq);

    const folded = fold(
      first.snapshot,
      received.filter((e) => e.seq <= rest.seq).map((e) => e.event),
    );
    expect(folded).toEqual(rest.snapshot);
    expect(fold(first.snapshot, received.map((e) => e.event))).toEqual(resnapshot.snapshot);

    // What the fold holds: the steer placed at the turn boundary, a second turn, then the aborted run.
    const text = transcriptText(folded);
    expect(text.slice(0, 5)).toEqual(["user: go", `assistant: ${words(50)}`, "user: also mention the weather", "assistant: second turn", "user: stop me"]);
    expect(text).toHaveLength(6);
    const last = folded.transcript.at(-1);
    expect(last?.type === "message" && last.message.role === "assistant" && last.message.stopReason).toBe("aborted");
    expect(folded.lastResult).toMatchObject({ operationId: aborted, status: "aborted" });
    expect(folded.operation).toBeNull();
    expect(folded.queues).toEqual([]);

    // Still alive after all that: ping → pong.
    client.ws.send("ping");
    expect(await client.next()).toEqual({ type: "text", text: "pong" });
  });

  it("the SDK's watchLane replica converges to the server's snapshot", async () => {
    const sid = "sdk-watched";
    await scriptedSession(api, sid);
    const watch = watchLane({ baseUrl: server.baseUrl, key, sessionId: sid, lane: "main", pingIntervalMs: 0 });
    watches.push(watch);
    const errors: string[] = [];
    const folds: string[] = [];
    watch.on((update) => {
      if (update.type === "event") folds.push(update.event.type);
      if (update.type === "resnapshot") errors.push(`resnapshot (${update.reason})`);
    });
    expect(await watch.ready).toMatchObject({ lane: "main", tipId: null, operation: null });

    await appendSteps(api, sid, [{ text: words(40, "sdk"), chunkMs: 40 }, { text: "after the steer" }]);
    const runId = await startRun(api, sid, "hello sdk");
    await pollUntil("the SDK to fold a streamed update", async () => folds, (types) => types.includes("message_update"));
    await api.expect(201, "POST", `/v1/sessions/${sid}/lanes/main/queue`, { body: { kind: "steer", message: "steer from the test" } });
    expect(await settled(api, sid, runId)).toMatchObject({ status: "completed" });

    // The replica is the server's snapshot once the last events arrived (bounded wait).
    const fresh = await api.expect<{ seq: number; snapshot: LaneSnapshot }>(200, "GET", `/v1/sessions/${sid}/lanes/main/snapshot`);
    await pollUntil("the SDK replica to equal GET …/snapshot", async () => watch.snapshot(), (replica) => sameJson(replica, fresh.snapshot));
    expect(watch.snapshot()).toEqual(fresh.snapshot);
    expect(transcriptText(fresh.snapshot)).toEqual([
      "user: hello sdk",
      `assistant: ${words(40, "sdk")}`,
      "user: steer from the test",
      "assistant: after the steer",
    ]);
    expect(watch.status()).toBe("open");
    expect(errors).toEqual([]);
    watch.close();
    expect(watch.status()).toBe("closed");
  });

  it("the SDK's watchLane over Node's built-in WebSocket stops at once on a refused upgrade (unknown session or lane, wrong key) and reports the API's code", async () => {
    await scriptedSession(api, "refused-watch");
    const cases = [
      { sessionId: "no-such-session", lane: "main", watchKey: key, code: "SessionNotFound", status: 404 },
      { sessionId: "refused-watch", lane: "no-such-lane", watchKey: key, code: "UnknownLane", status: 404 },
      { sessionId: "refused-watch", lane: "main", watchKey: "sk_wrong_key", code: "Unauthenticated", status: 401 },
    ];
    for (const { sessionId, lane, watchKey, code, status } of cases) {
      const statuses: string[] = [];
      // No maxAttempts: a refusal that a retry cannot change must end the watch by itself.
      const watch = watchLane({ baseUrl: server.baseUrl, key: watchKey, sessionId, lane, pingIntervalMs: 0, backoff: { initialMs: 10, maxMs: 20 } });
      watches.push(watch);
      watch.on((update) => {
        if (update.type === "status") statuses.push(update.status);
      });
      // Node's WebSocket reports a refused upgrade with an error event only, and hides its status.
      await expect(watch.ready).rejects.toMatchObject({ kind: "ended", code, status });
      // ("connecting" was emitted before the listener was added.) No "reconnecting": not retried.
      expect(statuses).toEqual(["closed"]);
      expect(watch.status()).toBe("closed");
    }
  });

  it("a watcher survives the object hibernating while idle and receives the next run's events", async () => {
    const sid = "hibernating";
    await scriptedSession(api, sid);
    await appendSteps(api, sid, [{ text: "after the nap" }]);
    const client = await openLaneWatch(server.baseUrl, key, sid, "main");
    sockets.push(client);
    const snapshot = await client.next();
    expect(snapshot.type).toBe("snapshot");
    // An object whose only connections are hibernatable sockets hibernates after ~10 s idle
    // (platform reference §1.7); wait past that, then start a run from outside.
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    const operationId = await startRun(api, sid, "wake up");
    const received = await client.until(isEvent("run_end", operationId));
    expect(eventsOf(received).map((e) => e.event.type)).toContain("run_start");
    expect((await settled(api, sid, operationId)).status).toBe("completed");
  }, 60_000);
});

/** Equal as JSON values (what the wire can carry: undefined properties are absent). */
function sameJson(a: unknown, b: unknown): boolean {
  return a !== undefined && isDeepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
}
