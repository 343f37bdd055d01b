import { describe, expect, it } from "vitest";
import type { JsonValue } from "../../schema/json.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { SessionSnapshot } from "../../schema/watch.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call, errorCode, newTenant } from "./helpers.ts";
import {
  connect,
  events,
  expectSnapshot,
  fold,
  isRunEnd,
  prompt,
  settled,
  strictlyIncreasing,
  upgrade,
  watchSetup,
} from "./watch-helpers.ts";

// The watch streams through the real Hono app (spec/API.md "Watch protocol", ARCHITECTURE D13,
// D14.13, D17): a snapshot, then the events after it with increasing seqs, folding to a fresh snapshot.

describe("lane watch", { timeout: 30_000 }, () => {
  it("sends a snapshot, then a run's events in order; the fold equals a fresh snapshot and a resnapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_run");
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    const first = await expectSnapshot(client);
    expect(first.snapshot).toMatchObject({ lane: "main", tipId: null, operation: null, transcript: [], faulted: false });
    const runId = await prompt(stub, "main", "hello there");
    const read = await client.until(isRunEnd(runId));
    const received = events(read);
    expect(received.map((e) => e.event.type)).toEqual(expect.arrayContaining(["run_start", "entry_added", "usage", "run_end"]));
    expect(received[0]?.event).toMatchObject({ type: "run_start", lane: "main", runId });
    expect(received[0]?.seq).toBeGreaterThan(first.seq);
    expect(strictlyIncreasing(received.map((e) => e.seq))).toBe(true);
    // Lane streams carry the JSON LaneWatchEvent variant: no turn, handler or inventory events.
    for (const { event } of received) expect(["turn_start", "turn_end", "lane_created", "handler_error", "value_update"]).not.toContain(event.type);
    await settled(stub, "main", runId);
    // Events the run might still bind after run_end come before the resnapshot's boundary.
    client.send(JSON.stringify({ type: "resnapshot" }));
    const rest = await client.until((message) => message.type === "snapshot");
    const again = rest.at(-1);
    if (again?.type !== "snapshot") throw new Error("no resnapshot");
    const all = [...received, ...events(rest)];
    expect(strictlyIncreasing([first.seq, ...all.map((e) => e.seq)])).toBe(true);
    expect(again.seq).toBeGreaterThanOrEqual(all.at(-1)?.seq ?? 0);
    const folded = fold(first.snapshot, all.map((e) => e.event));
    const fresh: LaneSnapshot = unwrap(await stub.laneSnapshot("main"));
    expect(folded).toStrictEqual(fresh);
    expect(again.snapshot).toStrictEqual(fresh);
    expect(fresh.lastResult).toMatchObject({ operationId: runId, status: "completed" });
    // The REST-side snapshot takes its seq from the same counter.
    const atSeq = unwrap(await stub.laneSnapshotAt("main"));
    expect(atSeq.seq).toBeGreaterThanOrEqual(again.seq);
    expect(atSeq.snapshot).toStrictEqual(fresh);
    // Events continue from the resnapshot's seq.
    const second = await prompt(stub, "main", "and again");
    const after = events(await client.until(isRunEnd(second)));
    expect(after[0]?.seq).toBeGreaterThan(again.seq);
    client.ws.close(1000, "done");
  });

  it("streams live message_update and tool events of a multi-turn run; the fold still equals a fresh snapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_stream");
    const steps: JsonValue[] = [{ toolCalls: [{ name: "lookup", arguments: { q: "a" } }] }, { text: Array.from({ length: 24 }, (_, i) => `word${i}`).join(" "), chunkMs: 60 }];
    for (const step of steps) unwrap(await stub.appendList("scripted", "steps", toWire(step)));
    unwrap(await stub.configureLane("main", toWire({ model: { provider: "scripted", modelId: "script" } })));
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    const first = await expectSnapshot(client);
    const runId = await prompt(stub, "main", "use a tool, then talk");
    const received = events(await client.until(isRunEnd(runId)));
    const types = received.map((e) => e.event.type);
    expect(types).toContain("message_update");
    expect(types).toContain("tool_start");
    expect(types).toContain("tool_end");
    expect(strictlyIncreasing(received.map((e) => e.seq))).toBe(true);
    await settled(stub, "main", runId);
    client.send(JSON.stringify({ type: "resnapshot" }));
    const rest = await client.until((message) => message.type === "snapshot");
    const again = rest.at(-1);
    if (again?.type !== "snapshot") throw new Error("no resnapshot");
    const folded = fold(first.snapshot, [...received, ...events(rest)].map((e) => e.event));
    expect(folded).toStrictEqual(again.snapshot);
    expect(folded).toStrictEqual(unwrap(await stub.laneSnapshot("main")));
    expect(folded.transcript.map((entry) => (entry.type === "message" ? entry.message.role : entry.type))).toEqual(["user", "assistant", "toolResult", "assistant"]);
    client.ws.close(1000);
  });

  it("answers ping with pong, and authenticates with a bearer subprotocol that the 101 selects", async () => {
    const { key, sessionPath } = await watchSetup("w_proto");
    const client = await connect(`${sessionPath}/lanes/main/watch`, { protocols: ["chat.v1", `bearer.${key}`] });
    expect(client.response.headers.get("Sec-WebSocket-Protocol")).toBe(`bearer.${key}`);
    await expectSnapshot(client);
    client.send("ping");
    expect(await client.next()).toEqual({ type: "text", text: "pong" });
    // With the header, no subprotocol is offered and none is selected.
    const plain = await connect(`${sessionPath}/lanes/main/watch`, key);
    expect(plain.response.headers.get("Sec-WebSocket-Protocol")).toBeNull();
    await expectSnapshot(plain);
    client.ws.close(1000);
    plain.ws.close(1000);
  });

  it("does not deliver another lane's events (usage is session-wide)", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_other", ["a", "b"]);
    const client = await connect(`${sessionPath}/lanes/a/watch`, key);
    await expectSnapshot(client);
    const onB = await prompt(stub, "b", "on lane b");
    await settled(stub, "b", onB);
    const onA = await prompt(stub, "a", "on lane a");
    const received = events(await client.until(isRunEnd(onA)));
    const foreign = received.filter(({ event }) => "lane" in event && event.lane === "b");
    expect(foreign.every(({ event }) => event.type === "usage")).toBe(true);
    expect(received.some(({ event }) => event.type === "run_start" && event.runId === onA)).toBe(true);
    client.ws.close(1000);
  });

  it("closes invalid client messages with 1008 / 1003, never crashing the object", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_invalid");
    const cases: [string | ArrayBuffer, number][] = [
      ["not json", 1008],
      [JSON.stringify({ type: "subscribe" }), 1008],
      [JSON.stringify({ type: "resnapshot", extra: 1 }), 1008],
      ["x".repeat(5000), 1008],
      [new Uint8Array([1, 2, 3]).buffer, 1003],
    ];
    for (const [message, code] of cases) {
      const client = await connect(`${sessionPath}/lanes/main/watch`, key);
      await expectSnapshot(client);
      client.ws.send(message);
      expect((await client.closed()).code).toBe(code);
    }
    // The object still serves.
    expect(unwrap(await stub.lanes()).items.map((lane) => lane.name)).toEqual(["main"]);
  });
});

describe("session watch", { timeout: 30_000 }, () => {
  it("sends the lane inventory, then lane lifecycle, operation starts and ends, usage and settings", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_session");
    const client = await connect<SessionSnapshot>(`${sessionPath}/watch`, key);
    const first = await expectSnapshot(client);
    expect(first.snapshot).toMatchObject({ lanes: [{ name: "main", tipId: null, operation: null }], faulted: false, stats: { messageCount: 0 } });
    unwrap(await stub.acquireLane("side"));
    unwrap(await stub.updateSettings(toWire({ steeringMode: "one-at-a-time" })));
    const runId = await prompt(stub, "side", "hi");
    const received = events(await client.until(isRunEnd(runId)));
    const types = received.map((e) => e.event.type);
    expect(types[0]).toBe("lane_created");
    expect(received[0]?.event).toMatchObject({ type: "lane_created", lane: "side" });
    expect(types).toContain("settings_update");
    expect(types).toContain("run_start");
    expect(types).toContain("usage");
    for (const type of types) expect(["message_start", "message_update", "message_end", "entry_added", "queue_update", "turn_start"]).not.toContain(type);
    expect(received.find((e) => e.event.type === "run_end")?.event).toMatchObject({ lane: "side", runId, status: "completed" });
    expect(strictlyIncreasing([first.seq, ...received.map((e) => e.seq)])).toBe(true);
    client.send(JSON.stringify({ type: "resnapshot" }));
    const again = (await client.until((message) => message.type === "snapshot")).at(-1);
    if (again?.type !== "snapshot") throw new Error("no resnapshot");
    expect(again.snapshot.lanes.map((lane) => lane.name)).toEqual(["main", "side"]);
    expect(again.snapshot.stats.messageCount).toBe(2);
    client.ws.close(1000);
  });
});

describe("watch upgrades at the edge", { timeout: 30_000 }, () => {
  it("refuses without a valid key (401), for another tenant's session or an unknown lane (404), bad ids (400), plain GET (426)", async () => {
    const { key, sessionPath } = await watchSetup("w_edge");
    const other = await newTenant("w_edge_other");
    const missing = await upgrade(`${sessionPath}/lanes/main/watch`);
    expect(missing.status).toBe(401);
    expect(await errorCode(missing)).toBe("Unauthenticated");
    const badProtocol = await upgrade(`${sessionPath}/watch`, { "Sec-WebSocket-Protocol": "bearer.sk_nope" });
    expect(badProtocol.status).toBe(401);
    const foreign = await upgrade(`${sessionPath}/lanes/main/watch`, { authorization: `Bearer ${other.key}` });
    expect(foreign.status).toBe(404);
    expect(await errorCode(foreign)).toBe("SessionNotFound");
    const foreignSession = await upgrade(`${sessionPath}/watch`, { "Sec-WebSocket-Protocol": `bearer.${other.key}` });
    expect(foreignSession.status).toBe(404);
    const unknownLane = await upgrade(`${sessionPath}/lanes/nope/watch`, { authorization: `Bearer ${key}` });
    expect(unknownLane.status).toBe(404);
    expect(await errorCode(unknownLane)).toBe("UnknownLane");
    const badLane = await upgrade(`${sessionPath}/lanes/has:colon/watch`, { authorization: `Bearer ${key}` });
    expect(badLane.status).toBe(400);
    expect(await errorCode(badLane)).toBe("ValidationFailed");
    const plain = await call(`${sessionPath}/lanes/main/watch`, { token: key });
    expect(plain.status).toBe(426);
    expect(plain.headers.get("Upgrade")).toBe("websocket");
    expect(await errorCode(plain)).toBe("UpgradeRequired");
    const plainUnauthenticated = await call(`${sessionPath}/watch`);
    expect(plainUnauthenticated.status).toBe(401);
  });
});
