import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { readAttachment } from "../../durable-objects/session/watch/watch-flow.ts";
import type { SessionSnapshot } from "../../schema/watch.ts";
import { unwrap } from "../helpers/sessions.ts";
import { connect, events, expectSnapshot, fold, isRunEnd, prompt, settled, strictlyIncreasing, watchSetup } from "./watch-helpers.ts";

// Watch sockets across hibernation and eviction (ARCHITECTURE D13; platform reference §1.7–1.8):
// hibernated sockets and their attachments survive and keep receiving events once the object is
// woken; a deploy-style close ends them and a reconnect starts from a fresh snapshot.

describe("watch across eviction", { timeout: 30_000 }, () => {
  it("a hibernated watcher receives the events of a run started after the eviction, with larger seqs", async () => {
    const { key, stub, sessionPath } = await watchSetup("h_survive");
    const lane = await connect(`${sessionPath}/lanes/main/watch`, key);
    const session = await connect<SessionSnapshot>(`${sessionPath}/watch`, key);
    const first = await expectSnapshot(lane);
    await expectSnapshot(session);
    const before = await prompt(stub, "main", "before the eviction");
    const earlier = events(await lane.until(isRunEnd(before)));
    await session.until(isRunEnd(before));
    await settled(stub, "main", before);

    await evictDurableObject(stub);
    // The new instance holds nothing in memory; the sockets and their attachments survived.
    const survived = await runInDurableObject(stub, (_instance: SessionObject, state) => ({
      lane: state.getWebSockets("lane:main").map((ws) => readAttachment(ws)),
      session: state.getWebSockets("session").length,
    }));
    expect(survived.lane).toEqual([
      // commandsKeyHash: the socket (a key's) may send commands, authorized by this hash after any restart.
      { v: 2, target: { kind: "lane", lane: "main" }, keyId: expect.any(String), ready: true, openedAt: expect.any(Number), sent: expect.any(Number), acked: 0, commandsKeyHash: expect.stringMatching(/^[0-9a-f]{64}$/) },
    ]);
    expect(survived.session).toBe(1);

    const after = await prompt(stub, "main", "after the eviction");
    const later = events(await lane.until(isRunEnd(after)));
    const sessionLater = events(await session.until(isRunEnd(after)));
    expect(later[0]?.event).toMatchObject({ type: "run_start", runId: after });
    expect(sessionLater.map((e) => e.event.type)).toContain("run_start");
    const all = [...earlier, ...later];
    expect(strictlyIncreasing([first.seq, ...all.map((e) => e.seq)])).toBe(true);
    await settled(stub, "main", after);
    expect(fold(first.snapshot, all.map((e) => e.event))).toStrictEqual(unwrap(await stub.laneSnapshot("main")));
    lane.ws.close(1000);
    session.ws.close(1000);
  });

  it("ping and resnapshot work on a hibernated socket (the message wakes the object)", async () => {
    const { key, stub, sessionPath } = await watchSetup("h_wake");
    const lane = await connect(`${sessionPath}/lanes/main/watch`, key);
    const first = await expectSnapshot(lane);
    const runId = await prompt(stub, "main", "hello");
    const seen = events(await lane.until(isRunEnd(runId)));
    await settled(stub, "main", runId);
    await evictDurableObject(stub);
    lane.send("ping");
    expect(await lane.next()).toEqual({ type: "text", text: "pong" });
    lane.send(JSON.stringify({ type: "resnapshot" }));
    const again = await expectSnapshot(lane);
    expect(again.seq).toBeGreaterThan(Math.max(first.seq, ...seen.map((e) => e.seq)));
    expect(again.snapshot).toStrictEqual(unwrap(await stub.laneSnapshot("main")));
    // Events keep flowing after the resnapshot, past its seq.
    const next = await prompt(stub, "main", "again");
    const later = events(await lane.until(isRunEnd(next)));
    expect(later[0]?.seq).toBeGreaterThan(again.seq);
    lane.ws.close(1000);
  });

  it("a deploy-style eviction closes the socket; a reconnect gets a fresh snapshot with a larger seq", async () => {
    const { key, stub, sessionPath } = await watchSetup("h_close");
    const lane = await connect(`${sessionPath}/lanes/main/watch`, key);
    await expectSnapshot(lane);
    const runId = await prompt(stub, "main", "hello");
    const seen = events(await lane.until(isRunEnd(runId)));
    await settled(stub, "main", runId);
    await evictDurableObject(stub, { webSockets: "close" });
    const closed = await lane.closed();
    expect(closed.code).not.toBe(1000);
    const reconnected = await connect(`${sessionPath}/lanes/main/watch`, key);
    const fresh = await expectSnapshot(reconnected);
    expect(fresh.seq).toBeGreaterThan(Math.max(...seen.map((e) => e.seq)));
    expect(fresh.snapshot).toStrictEqual(unwrap(await stub.laneSnapshot("main")));
    expect(fresh.snapshot.lastResult).toMatchObject({ operationId: runId, status: "completed" });
    reconnected.ws.close(1000);
  });
});
