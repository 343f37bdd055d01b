import { describe, expect, it } from "vitest";
import { SEND_SLICE } from "../../durable-objects/session/watch/send-queue.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { eventsOf, isRunEndEvent, openEvents, snapshotOf } from "./sse-helpers.ts";
import { connect, events, expectSnapshot, fold, isRunEnd, prompt, settled, strictlyIncreasing, watchSetup, type Client } from "./watch-helpers.ts";

// A lane's audience larger than one send slice (durable-objects/session/watch/send-queue.ts
// SEND_SLICE): a flush goes out over several turns, with the object's other work (here: more
// sockets joining, the front worker relaying SSE streams) in between. Every watcher still gets
// every event once, in seq order, folding to the fresh snapshot, whichever slice it was in.

/** Two streamed answers: each run flushes several times (its start, live updates, its end). */
async function scriptAnswers(stub: Awaited<ReturnType<typeof watchSetup>>["stub"]): Promise<void> {
  const steps: JsonValue[] = [0, 1].map((answer) => ({ text: Array.from({ length: 12 }, (_, i) => `a${answer}w${i}`).join(" "), chunkMs: 15 }));
  for (const step of steps) unwrap(await stub.appendList("scripted", "steps", toWire(step)));
  unwrap(await stub.configureLane("main", toWire({ model: { provider: "scripted", modelId: "script" } })));
}

describe("a lane audience larger than one send slice", { timeout: 60_000 }, () => {
  it("every socket and SSE stream gets every event of two runs once, in seq order, folding to the fresh snapshot; sockets joining mid-run too", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_large");
    await scriptAnswers(stub);
    const sockets: Client<LaneSnapshot>[] = [];
    for (let index = 0; index < 2 * SEND_SLICE + 10; index++) sockets.push(await connect(`${sessionPath}/lanes/main/watch${index % 2 === 0 ? "?batch=true" : ""}`, key));
    const starts = await Promise.all(sockets.map((client) => expectSnapshot(client)));
    const streams = await Promise.all(Array.from({ length: 5 }, () => openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` })));
    const streamStarts = await Promise.all(streams.map(async ({ stream }) => snapshotOf(await stream.next())));

    const first = await prompt(stub, "main", "first question");
    // Joining while the run's flushes go out slice by slice: from its snapshot on, nothing missed or repeated.
    const late: Client<LaneSnapshot>[] = [];
    for (let index = 0; index < 5; index++) late.push(await connect(`${sessionPath}/lanes/main/watch`, key));
    const lateStarts = await Promise.all(late.map((client) => expectSnapshot(client)));
    await settled(stub, "main", first);
    const second = await prompt(stub, "main", "second question");
    await settled(stub, "main", second);
    const fresh: LaneSnapshot = unwrap(await stub.laneSnapshot("main"));

    const reads = await Promise.all(sockets.map(async (client) => events(await client.until(isRunEnd(second)))));
    const reference = reads[0] ?? [];
    expect(reference.filter(({ event }) => event.type === "message_update").length).toBeGreaterThan(0);
    expect(strictlyIncreasing(reference.map(({ seq }) => seq))).toBe(true);
    for (const [index, received] of reads.entries()) {
      expect(received, `socket ${index}`).toStrictEqual(reference);
      expect(fold((starts[index] as { snapshot: LaneSnapshot }).snapshot, received.map(({ event }) => event))).toStrictEqual(fresh);
    }
    for (const [index, client] of late.entries()) {
      const start = lateStarts[index] as { seq: number; snapshot: LaneSnapshot };
      const received = events(await client.until(isRunEnd(second)));
      expect(received).toStrictEqual(reference.filter(({ seq }) => seq > start.seq));
      expect(fold(start.snapshot, received.map(({ event }) => event))).toStrictEqual(fresh);
    }
    for (const [index, { stream }] of streams.entries()) {
      const received = eventsOf(await stream.until(isRunEndEvent(second)));
      expect(received.map(({ seq, event }) => ({ seq, event }))).toStrictEqual(reference);
      expect(fold((streamStarts[index] as { snapshot: LaneSnapshot }).snapshot, received.map(({ event }) => event))).toStrictEqual(fresh);
    }
    for (const client of [...sockets, ...late]) client.ws.close(1000, "done");
    for (const { stream } of streams) await stream.cancel();
  });
});
