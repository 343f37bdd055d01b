import { describe, expect, it } from "vitest";
import type { LaneSnapshot } from "../../schema/lane.ts";
import { isRebase, reduceLaneSnapshot } from "../../schema/reduce-lane-snapshot.ts";
import { call } from "./helpers.ts";
import { eventsOf, openEvents, snapshotOf } from "./sse-helpers.ts";
import { isRunEnd, prompt, settled, watchSetup } from "./watch-helpers.ts";

// docs/api-watch.md "Streaming over HTTP (SSE)": after a `navigation_end` event a fresh
// `event: snapshot` follows; "a resumed stream always folds to the lane's state: folding the events
// after a resume onto the replica you had equals GET …/lanes/{lane}/snapshot". An EventSource that
// got the navigation_end but lost the connection before the snapshot that follows it reconnects
// with Last-Event-ID = the navigation_end's id: its replica is a pending rebase, so the resumed
// stream must carry the fresh snapshot.

describe("SSE resumed right after a navigation_end", { timeout: 30_000 }, () => {
  it("a stream resumed after the navigation_end's own id still gets the snapshot the rebase needs", async () => {
    const { key, stub, sessionPath } = await watchSetup("rvssenav");
    const first = await prompt(stub, "main", "one");
    await settled(stub, "main", first);
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    snapshotOf(await stream.next());

    const navigated = await call(`${sessionPath}/lanes/main/navigate`, { body: { targetId: null }, token: key });
    expect(navigated.status).toBe(200);
    const read = await stream.until((item) => eventsOf([item])[0]?.event.type === "navigation_end");
    const navigationEndId = read.at(-1)?.id ?? "";
    expect(navigationEndId).toMatch(/^[0-9a-f]{12}\.\d+$/);
    // The connection drops here, before the snapshot that follows the navigation is read.
    await stream.cancel();

    const resumed = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}`, "last-event-id": navigationEndId });
    const second = await prompt(stub, "main", "two");
    await settled(stub, "main", second);
    const items = await resumed.stream.until((item) => item.event === "event" && isRunEnd(second)(JSON.parse(item.data)));
    await resumed.stream.cancel();

    // The replica after navigation_end is a rebase: only a snapshot on the resumed stream lets it fold.
    const snapshotIndex = items.findIndex((item) => item.event === "snapshot");
    expect(snapshotIndex, `resumed stream: ${items.map((item) => item.event).join(",")}`).toBeGreaterThanOrEqual(0);
    const base = snapshotOf(items[snapshotIndex]);
    let replica: LaneSnapshot = base.snapshot;
    for (const { event } of eventsOf(items.slice(snapshotIndex + 1))) {
      const next = reduceLaneSnapshot(replica, event);
      if (isRebase(next)) throw new Error("unexpected rebase");
      replica = next;
    }
    const fresh = await (await call(`${sessionPath}/lanes/main/snapshot`, { token: key })).json<{ snapshot: LaneSnapshot }>();
    expect(replica.tipId).toBe(fresh.snapshot.tipId);
  });
});
