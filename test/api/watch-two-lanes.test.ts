import { describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { SessionSnapshot } from "../../schema/watch.ts";
import { toWire } from "../../schema/wire.ts";
import { unwrap } from "../helpers/sessions.ts";
import { connect, events, expectSnapshot, fold, prompt, settled, watchSetup } from "./watch-helpers.ts";

// Engine hardening 2: in a multi-lane session every lane stream still folds to a fresh snapshot,
// session stats included (reference §5.4: fold(snapshot, events) = later snapshot, per stream).

describe("hardening 2: lane-stream fold equals a fresh snapshot with two lanes running in turn", { timeout: 30_000 }, () => {
  it("each lane's watcher stays exact while the other lane runs, over real WebSockets", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_two", ["a", "b"]);
    const watchA = await connect(`${sessionPath}/lanes/a/watch`, key);
    const watchB = await connect(`${sessionPath}/lanes/b/watch`, key);
    const watchSession = await connect<SessionSnapshot>(`${sessionPath}/watch`, key);
    const firstA = await expectSnapshot(watchA);
    const firstB = await expectSnapshot(watchB);
    await expectSnapshot(watchSession);
    const received: { a: ReturnType<typeof events>; b: ReturnType<typeof events> } = { a: [], b: [] };
    for (const lane of ["b", "a", "b"] as const) {
      const runId = await prompt(stub, lane, `a prompt on lane ${lane}`);
      await settled(stub, lane, runId);
      // An entry appended to the idle lane counts as a message too.
      unwrap(await stub.appendToLane(lane, toWire({ message: { role: "user", content: "a note", timestamp: 1 } })));
    }
    // A data-only branch (no lane) counts as well.
    unwrap(await stub.createBranch("data", null));
    unwrap(await stub.appendToBranch("data", toWire({ message: { role: "user", content: "data", timestamp: 1 } })));
    // Each stream is read up to a resnapshot boundary, placed after everything above.
    for (const [name, client, first] of [["a", watchA, firstA], ["b", watchB, firstB]] as const) {
      client.send(JSON.stringify({ type: "resnapshot" }));
      const read = await client.until((message) => message.type === "snapshot");
      received[name] = events(read);
      const again = read.at(-1);
      if (again?.type !== "snapshot") throw new Error("no resnapshot");
      const folded = fold(first.snapshot, received[name].map((e) => e.event));
      const fresh: LaneSnapshot = unwrap(await stub.laneSnapshot(name));
      expect(folded).toStrictEqual(fresh);
      expect(again.snapshot).toStrictEqual(fresh);
      expect(fresh.stats.messageCount).toBe(10);
    }
    // The session stream carries the same stats as they change.
    watchSession.send(JSON.stringify({ type: "resnapshot" }));
    const sessionRead = await watchSession.until((message) => message.type === "snapshot");
    const lastStats = events(sessionRead).flatMap((e) => (e.event.type === "stats" ? [e.event.stats] : [])).at(-1);
    const sessionAgain = sessionRead.at(-1);
    if (sessionAgain?.type !== "snapshot") throw new Error("no session resnapshot");
    expect(lastStats).toStrictEqual(sessionAgain.snapshot.stats);
    for (const client of [watchA, watchB, watchSession]) client.ws.close(1000, "done");
  });
});
