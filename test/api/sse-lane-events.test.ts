import { describe, expect, it } from "vitest";
import type { JsonValue } from "../../schema/json.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { call } from "./helpers.ts";
import { eventsOf, isRunEndEvent, openEvents, snapshotOf } from "./sse-helpers.ts";
import { connect, events, expectSnapshot, fillLane, fold, isRunEnd, prompt, settled, strictlyIncreasing, watchSetup } from "./watch-helpers.ts";
import { WATCH_UNACKED_WINDOW_BYTES } from "../../schema/watch.ts";

// `GET …/lanes/{lane}/events` (docs/api-watch.md "Streaming over HTTP (SSE)"): the watch protocol
// as Server-Sent Events through the real app, served by the front worker over a relay socket.

/** A scripted run slow enough to be interrupted: a tool call, then a streamed answer. */
async function scriptSlowRun(stub: Awaited<ReturnType<typeof watchSetup>>["stub"]): Promise<void> {
  const steps: JsonValue[] = [{ toolCalls: [{ name: "lookup", arguments: { q: "a" } }] }, { text: Array.from({ length: 30 }, (_, i) => `word${i}`).join(" "), chunkMs: 40 }];
  for (const step of steps) unwrap(await stub.appendList("scripted", "steps", toWire(step)));
  unwrap(await stub.configureLane("main", toWire({ model: { provider: "scripted", modelId: "script" } })));
}

async function restSnapshot(sessionPath: string, key: string): Promise<{ seq: number; snapshot: LaneSnapshot }> {
  const response = await call(`${sessionPath}/lanes/main/snapshot`, { token: key });
  expect(response.status).toBe(200);
  return response.json();
}

describe("lane events over SSE", { timeout: 30_000 }, () => {
  it("sends a snapshot, then every event of a run with `id: <epoch>.<seq>` in seq order; the fold equals GET …/snapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("sse_run");
    await scriptSlowRun(stub);
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    const first = await stream.next();
    const start = snapshotOf(first);
    expect(first?.id).toMatch(new RegExp(`^[0-9a-f]{12}\\.${start.seq}$`));
    expect(start.snapshot).toMatchObject({ lane: "main", operation: null, transcript: [] });
    const runId = await prompt(stub, "main", "use a tool, then talk");
    const received = eventsOf(await stream.until(isRunEndEvent(runId)));
    expect(received.map((e) => e.event.type)).toEqual(expect.arrayContaining(["run_start", "tool_start", "message_update", "run_end"]));
    expect(strictlyIncreasing([start.seq, ...received.map((e) => e.seq)])).toBe(true);
    const epoch = first?.id?.split(".")[0];
    for (const { id, seq } of received) expect(id).toBe(`${epoch}.${seq}`);
    await settled(stub, "main", runId);
    const rest = await restSnapshot(sessionPath, key);
    // Events bound after run_end (none expected, but the REST seq says) would come before this seq.
    const late = rest.seq > (received.at(-1)?.seq ?? 0) ? eventsOf(await stream.until((item) => Number(item.id?.split(".")[1]) >= rest.seq)) : [];
    expect(fold(start.snapshot, [...received, ...late].map((e) => e.event))).toStrictEqual(rest.snapshot);
    await stream.cancel();
  });

  it("follows a navigation with a fresh snapshot event (the lane was rebased); the fold from it equals GET …/snapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("sse_nav");
    const first = await prompt(stub, "main", "one");
    await settled(stub, "main", first);
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    const start = snapshotOf(await stream.next());
    expect(start.snapshot.transcript.length).toBeGreaterThan(0);
    const navigated = await call(`${sessionPath}/lanes/main/navigate`, { body: { targetId: null }, token: key });
    expect(navigated.status).toBe(200);
    const read = await stream.until((item) => item.event === "snapshot");
    expect(eventsOf(read).map((e) => e.event.type)).toContain("navigation_end");
    const rebased = snapshotOf(read.at(-1));
    expect(rebased.snapshot.tipId).toBeNull();
    expect(rebased.snapshot.transcript).toEqual([]);
    const rest = await restSnapshot(sessionPath, key);
    expect(rebased.seq).toBeLessThanOrEqual(rest.seq);
    expect(rebased.snapshot).toEqual(rest.snapshot);
  });

  it("ends a stream whose reader stopped reading (1013) once the window is unacknowledged; what it got is at most the window", async () => {
    const { key, stub, sessionPath } = await watchSetup("sse_slow");
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    snapshotOf(await stream.next());
    // About 18 MiB of entries while the reader reads nothing: the relay acknowledges only what the
    // HTTP reader took, so the object stops at its window and closes the relay as a slow consumer.
    await fillLane(stub, "main", 72, 256 * 1024);
    const rest = await stream.ended();
    const last = rest.filter((item) => item.event !== "comment").at(-1);
    expect(last?.event).toBe("error");
    expect(JSON.parse(last?.data ?? "null")).toMatchObject({ code: 1013 });
    const received = eventsOf(rest).length;
    expect(received).toBeGreaterThan(0);
    expect(received * 256 * 1024).toBeLessThanOrEqual(WATCH_UNACKED_WINDOW_BYTES + 2 * 256 * 1024);
  });

  it("resumes after Last-Event-ID with exactly the missed events (no snapshot); the fold equals GET …/snapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("sse_resume");
    await scriptSlowRun(stub);
    // A socket watcher sees every event: the reference for what the stream must deliver.
    const witness = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(witness);
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    const start = snapshotOf(await stream.next());
    const runId = await prompt(stub, "main", "use a tool, then talk");
    // Disconnect mid-run: after the tool ran, while the answer streams.
    const before = eventsOf(await stream.until((item) => eventsOf([item])[0]?.event.type === "tool_end"));
    await stream.cancel();
    const lastId = before.at(-1)?.id ?? "";
    const all = events(await witness.until(isRunEnd(runId)));
    await settled(stub, "main", runId);
    const rest = await restSnapshot(sessionPath, key);

    const resumed = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}`, "last-event-id": lastId });
    const first = await resumed.stream.next();
    expect(first?.event).toBe("event");
    const after = eventsOf([first ?? { event: "none", data: "" }, ...(await resumed.stream.until(isRunEndEvent(runId)))]);
    const lastSeq = before.at(-1)?.seq ?? 0;
    expect([...before, ...after].map((e) => e.seq)).toEqual(all.map((e) => e.seq));
    expect(after.map((e) => e.seq)).toEqual(all.filter((e) => e.seq > lastSeq).map((e) => e.seq));
    expect(fold(start.snapshot, [...before, ...after].map((e) => e.event))).toStrictEqual(rest.snapshot);
    await resumed.stream.cancel();

    // `?after=` does the same.
    const byQuery = await openEvents(`${sessionPath}/lanes/main/events?after=${encodeURIComponent(lastId)}`, { authorization: `Bearer ${key}` });
    expect(eventsOf(await byQuery.stream.until(isRunEndEvent(runId))).map((e) => e.seq)).toEqual(after.map((e) => e.seq));
    await byQuery.stream.cancel();
    witness.ws.close(1000);
  });

  it("starts with a snapshot for an id it cannot vouch for: garbled, another epoch, or a seq never numbered", async () => {
    const { key, stub, sessionPath } = await watchSetup("sse_bogus");
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    const first = await stream.next();
    const { seq } = snapshotOf(first);
    const epoch = first?.id?.split(".")[0] ?? "";
    await stream.cancel();
    const runId = await prompt(stub, "main", "something to miss");
    await settled(stub, "main", runId);
    for (const id of ["garbage", "000000000000.1", `${epoch}.${seq + 1_000_000}`, `${epoch}.-1`, "x".repeat(60)]) {
      const { stream: again } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}`, "last-event-id": id });
      const opened = snapshotOf(await again.next());
      expect(opened.snapshot.lastResult).toMatchObject({ operationId: runId });
      await again.cancel();
    }
    // The id still in the window resumes: the run's events, no snapshot.
    const { stream: resumed } = await openEvents(`${sessionPath}/lanes/main/events?after=${epoch}.${seq}`, { authorization: `Bearer ${key}` });
    expect((await resumed.next())?.event).toBe("event");
    await resumed.cancel();
  });

  it("sends a `: ping` comment every `heartbeat` seconds", async () => {
    const { key, sessionPath } = await watchSetup("sse_ping");
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events?heartbeat=1`, { authorization: `Bearer ${key}` });
    snapshotOf(await stream.next());
    const read = await stream.until((item) => item.event === "comment", true);
    expect(read.at(-1)).toEqual({ event: "comment", data: "ping" });
    await stream.cancel();
  });

  it("ends the stream with an `error` event when the session is deleted", async () => {
    const { key, sessionPath } = await watchSetup("sse_delete");
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    snapshotOf(await stream.next());
    expect((await call(sessionPath, { method: "DELETE", token: key })).status).toBe(204);
    const rest = (await stream.ended()).filter((item) => item.event !== "comment");
    expect(rest.at(-1)?.event).toBe("error");
    expect(JSON.parse(rest.at(-1)?.data ?? "{}")).toMatchObject({ code: 1000 });
  });

  it("refuses without credentials (401), another tenant's session (404), an unknown lane (404) and a bad query (400)", async () => {
    const { key, sessionPath } = await watchSetup("sse_refuse");
    const other = await watchSetup("sse_other");
    const status = async (path: string, token?: string) => (await call(path, { ...(token !== undefined && { token }), headers: { accept: "text/event-stream" } })).status;
    expect(await status(`${sessionPath}/lanes/main/events`)).toBe(401);
    expect(await status(`${sessionPath}/lanes/main/events`, "garbled")).toBe(401);
    expect(await status(`${sessionPath}/lanes/main/events`, other.key)).toBe(404);
    expect(await status(`${sessionPath}/lanes/nope/events`, key)).toBe(404);
    expect(await status(`${sessionPath}/lanes/main/events?heartbeat=0`, key)).toBe(400);
    expect(await status(`${sessionPath}/lanes/main/events?heartbeat=61`, key)).toBe(400);
  });
});
