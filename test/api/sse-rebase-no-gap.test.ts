import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { toWire } from "../../schema/wire.ts";
import { call } from "./helpers.ts";
import { eventsOf, openEvents, snapshotOf } from "./sse-helpers.ts";
import { prompt, settled, watchSetup } from "./watch-helpers.ts";

// docs/api-watch.md "Streaming over HTTP (SSE)": "After a navigation_end event a fresh
// event: snapshot follows (also on a resumed stream whose missed events hold the navigation)";
// "a resumed stream always folds to the lane's state". Events of the lane stream bound after the
// navigation_end but before the rebase snapshot's capture (here the `stats` of a prompt accepted
// on another lane at that moment: `stats` is in every lane's stream) used to reach the stream
// between the two; a client that got them and lost the connection before the snapshot resumed
// from one of them, and the resume could not tell that a rebase snapshot was owed. A relay owed
// that snapshot now gets no event until it (the snapshot covers them), so the stream never holds
// an id between a navigation_end and its snapshot, and a resume from the navigation_end gets one.

describe("an SSE stream across a navigation", { timeout: 30_000 }, () => {
  it("holds no event between the navigation_end and its rebase snapshot, and a resume from the navigation_end gets that snapshot", async () => {
    const { key, stub, sessionPath } = await watchSetup("sse_navgap", ["main", "b"]);
    const first = await prompt(stub, "main", "one");
    await settled(stub, "main", first);

    // Another lane's prompt accepted the moment main's navigation ends (as a concurrent client
    // could): its acceptance commit places a message, so a `stats` event follows on every lane stream.
    await runInDurableObject(stub, async (instance: SessionObject) => {
      const harness = await instance.harness();
      let fired = false;
      harness.events.on("navigation_end", () => {
        if (fired) return;
        fired = true;
        void instance.acceptOperation("b", toWire({ kind: "prompt", prompt: "concurrent" }));
      });
    });

    const { stream } = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}` });
    snapshotOf(await stream.next());
    const navigated = await call(`${sessionPath}/lanes/main/navigate`, { body: { targetId: null }, token: key });
    expect(navigated.status).toBe(200);
    const read = await stream.until((item) => item.event === "snapshot");
    const kinds = read.map((item) => `${item.event}:${item.event === "event" ? eventsOf([item])[0]?.event.type : ""}@${item.id}`);
    const navIndex = read.findIndex((item) => eventsOf([item])[0]?.event.type === "navigation_end");
    // Nothing between the navigation_end and its snapshot, although the other lane's stats came meanwhile.
    expect(read.slice(navIndex + 1).map((item) => item.event), kinds.join(" ")).toEqual(["snapshot"]);
    const navigationEndId = read[navIndex]?.id ?? "";
    await stream.cancel();

    // A client that got the navigation_end but not the snapshot resumes from it: the snapshot comes.
    const resumed = await openEvents(`${sessionPath}/lanes/main/events`, { authorization: `Bearer ${key}`, "last-event-id": navigationEndId });
    const second = await prompt(stub, "main", "two");
    await settled(stub, "main", second);
    const items = await resumed.stream.until((item) => eventsOf([item])[0]?.event.type === "run_end" && (eventsOf([item])[0]?.event as { runId?: string }).runId === second);
    await resumed.stream.cancel();
    expect(items.some((item) => item.event === "snapshot"), items.map((item) => `${item.event}@${item.id}`).join(" ")).toBe(true);
  });
});
