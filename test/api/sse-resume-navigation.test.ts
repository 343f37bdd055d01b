import { describe, expect, it } from "vitest";
import { call } from "./helpers.ts";
import { eventsOf, openEvents, snapshotOf } from "./sse-helpers.ts";
import { prompt, settled, watchSetup } from "./watch-helpers.ts";

// docs/api-watch.md: after a `navigation_end` event a fresh `event: snapshot` follows, so that a
// reader can fold past the rebase. A live stream gets it (watch-hub.ts queueDeliveries); so must a
// stream resumed with Last-Event-ID whose missed events hold the navigation (watch-hub.ts resume).

describe("SSE resumed across a navigation", { timeout: 30_000 }, () => {
  it("a stream resumed from before a navigation_end gets the navigation, then a fresh snapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("ssenav");
    const first = await prompt(stub, "main", "one");
    await settled(stub, "main", first);
    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    const opened = await stream.next();
    snapshotOf(opened);
    const lastId = opened?.id ?? "";
    await stream.cancel();

    const navigated = await call(`${sessionPath}/lanes/main/navigate`, { body: { targetId: null }, token: key });
    expect(navigated.status).toBe(200);

    const resumed = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}`, "last-event-id": lastId });
    const read = await resumed.stream.until((item) => eventsOf([item])[0]?.event.type === "navigation_end");
    // Resumed: the missed events, no leading snapshot.
    expect(read[0]?.event).toBe("event");
    const next = await resumed.stream.until((item) => item.event === "snapshot");
    expect(snapshotOf(next.at(-1)).snapshot.tipId).toBeNull();
    await resumed.stream.cancel();
  });
});
