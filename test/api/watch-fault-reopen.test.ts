import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { call } from "./helpers.ts";
import { connect, expectSnapshot, prompt, settled, watchSetup } from "./watch-helpers.ts";

// docs/api-watch.md "Seq": "The server never drops an event from an open socket: it closes the
// socket instead, and the client reconnects for a new snapshot"; reference §5.4 fold equivalence:
// folding a socket's snapshot over its events equals a later snapshot. A harness fault makes the
// host open a new harness over the same storage (session-host.ts open()). The watch hub used to
// move the sockets that had their snapshot onto the new feed without a fresh baseline: their
// replicas kept what the old harness said (`faulted: true`), which the new one's snapshots did
// not. Every socket is now closed 1012 (reconnect), and a new one's snapshot is the lane's state.

describe("a watch socket across a harness fault and reopen", { timeout: 30_000 }, () => {
  it("closes every socket 1012, and a reconnected one folds from the lane's state", async () => {
    const { key, stub, sessionPath } = await watchSetup("watch_fault");
    const client = await connect(`${sessionPath}/lanes/main/watch`, key);
    const first = await expectSnapshot(client);
    expect(first.snapshot.faulted).toBe(false);

    await runInDurableObject(stub, async (instance: SessionObject) => {
      (await instance.harness()).fault(new Error("injected storage failure"));
    });
    // The next call reopens a fresh harness over the same storage; a run on it.
    const runId = await prompt(stub, "main", "after the fault");
    await settled(stub, "main", runId);
    const rest = await call(`${sessionPath}/lanes/main/snapshot`, { token: key });
    expect(rest.status).toBe(200);
    const { snapshot: restSnapshot } = await rest.json<{ seq: number; snapshot: LaneSnapshot }>();
    expect(restSnapshot.faulted).toBe(false);

    // The old socket was closed for a restart; a new one starts from the lane's state.
    expect(await client.closed()).toMatchObject({ code: 1012 });
    const again = await connect(`${sessionPath}/lanes/main/watch`, key);
    expect((await expectSnapshot(again)).snapshot).toStrictEqual(restSnapshot);
    again.ws.close(1000);
  });
});
