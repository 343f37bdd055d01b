import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { LIVE_UPDATE_MAX_INTERVAL_MS, liveUpdateIntervalFor } from "../../durable-objects/session/watch/watch-pacing.ts";
import { WIRE_UPDATE_INTERVAL_MS } from "../../harness/execution/frames-throttle.ts";
import { connect, expectSnapshot, watchSetup } from "./watch-helpers.ts";

// A lane's live updates are paced by its audience (durable-objects/session/watch/watch-pacing.ts):
// every update is one send per watcher, so a large audience gets fewer, larger updates (the engine
// side of the pacing is tested in test/runtime/watch-deltas.test.ts).

describe("live update pacing", { timeout: 60_000 }, () => {
  it("keeps the wire throttle for small audiences, then stays within the send budget, capped at a second", () => {
    expect(liveUpdateIntervalFor(0)).toBe(WIRE_UPDATE_INTERVAL_MS);
    expect(liveUpdateIntervalFor(50)).toBe(WIRE_UPDATE_INTERVAL_MS);
    expect(liveUpdateIntervalFor(100)).toBe(100);
    expect(liveUpdateIntervalFor(500)).toBe(500);
    expect(liveUpdateIntervalFor(5_000)).toBe(LIVE_UPDATE_MAX_INTERVAL_MS);
  });

  it("the session object paces each lane by the sockets watching it", async () => {
    const { key, stub, sessionPath } = await watchSetup("w_pacing", ["main", "side"]);
    const clients = [];
    for (let i = 0; i < 120; i++) {
      const client = await connect(`${sessionPath}/lanes/main/watch`, key);
      await expectSnapshot(client);
      clients.push(client);
    }
    const side = await connect(`${sessionPath}/lanes/side/watch`, key);
    await expectSnapshot(side);
    const paced = (instance: SessionObject) => ({ main: instance["liveUpdateIntervalMs"]("main"), side: instance["liveUpdateIntervalMs"]("side") });
    expect(await runInDurableObject(stub, paced)).toEqual({ main: 120, side: WIRE_UPDATE_INTERVAL_MS });
    for (const client of clients.splice(0, 100)) client.ws.close(1000, "done");
    // Closes reach the object asynchronously; the pacing follows once they have.
    let after = await runInDurableObject(stub, paced);
    for (let tries = 0; after.main !== WIRE_UPDATE_INTERVAL_MS && tries < 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      after = await runInDurableObject(stub, paced);
    }
    expect(after).toEqual({ main: WIRE_UPDATE_INTERVAL_MS, side: WIRE_UPDATE_INTERVAL_MS });
    for (const client of [...clients, side]) client.ws.close(1000, "done");
  });
});
