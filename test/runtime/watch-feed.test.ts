import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import type { SessionSnapshot } from "../../schema/watch.ts";
import { createSession } from "../helpers/sessions.ts";
import { acceptPrompt, attach, settledRecord, until } from "./crash-rig.ts";
import { deliveredSoFar, foldEvents } from "./watch-fold.ts";

// The EventFeed (harness/runtime/watch.ts) behind the WebSocket hub: one ordered stream of every
// event, with each capture's boundary placed exactly where the capture happened on the line, even
// while a streaming run binds events concurrently. Folding each capture over the feed events after
// its boundary must equal the final snapshot.

type Item = { kind: "event"; event: HarnessEvent } | { kind: "boundary"; id: number; snapshot: LaneSnapshot };

describe("event feed", () => {
  it("places every capture's boundary at its point on the line, with each event delivered once", async () => {
    const { stub } = await createSession("feed");
    await runInDurableObject(stub, async (instance: SessionObject) => {
      const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(" ");
      await appendScriptSteps(instance.session(), [{ toolCalls: [{ name: "lookup", arguments: { q: "x" } }] }, { text: words, chunkMs: 10 }]);
      const rig = await attach(instance);
      const lane = await rig.harness.lane("main");
      // A slow subscriber makes delivery lag behind binding: captures then happen while earlier
      // events are still undelivered, which is what the boundary placement must get right.
      rig.harness.events.on("*", () => new Promise<void>((resolve) => setTimeout(resolve, 4)));
      const items: Item[] = [];
      await deliveredSoFar(rig.harness);
      const before = rig.events.length;
      const feed = rig.harness.openFeed((event) => items.push({ kind: "event", event }));
      const operationId = await acceptPrompt(lane, "go");
      const pass = lane.drive({ operationId, waitForRetry: false });
      // Captures while the run streams: each boundary lands in the feed at its point on the line.
      const captures: Promise<LaneSnapshot>[] = [];
      for (let id = 0; id < 12; id++) {
        captures.push(feed.capture((m) => lane.captureSnapshot(m), (snapshot) => items.push({ kind: "boundary", id, snapshot })));
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
      const captured = await Promise.all(captures);
      expect(settledRecord(await pass).status).toBe("completed");
      await deliveredSoFar(rig.harness);
      await until(() => items.filter((item) => item.kind === "boundary").length === 12, "every boundary");
      const final = await lane.watch();
      final.unsubscribe();
      // Each event once, in the order an ordinary subscriber saw them. (Live partials are compared
      // by type only: the engine emits the streaming message by reference and each recipient clones
      // it at its own delivery, so a later recipient may see a longer partial.)
      const feedEvents = items.flatMap((item) => (item.kind === "event" ? [withoutLivePartial(item.event)] : []));
      expect(feedEvents).toStrictEqual(rig.events.slice(before).map(withoutLivePartial));
      const boundaries = items.flatMap((item, index) => (item.kind === "boundary" ? [{ ...item, index }] : []));
      expect(boundaries.map((b) => b.id)).toEqual(captured.map((_, id) => id));
      for (const boundary of boundaries) {
        expect(boundary.snapshot).toBe(captured[boundary.id]);
        const after = items.slice(boundary.index + 1).flatMap((item) => (item.kind === "event" ? [item.event] : []));
        expect(foldEvents(boundary.snapshot, after)).toStrictEqual(final.snapshot);
      }
      // Some captures really did land mid-run.
      expect(captured.some((snapshot) => snapshot.operation !== null)).toBe(true);
      feed.close();
    });
  });

  it("watchSession gives the lane inventory, fault flag and stats, then later events", async () => {
    const { stub } = await createSession("feed_session");
    await runInDurableObject(stub, async (instance: SessionObject) => {
      const rig = await attach(instance);
      await rig.harness.lane("main");
      const watch = await rig.harness.watchSession();
      const snapshot: SessionSnapshot = watch.snapshot;
      expect(snapshot).toEqual({ lanes: [{ name: "main", tipId: null, operation: null }], faulted: false, stats: expect.objectContaining({ messageCount: 0 }) });
      const seen: HarnessEvent[] = [];
      watch.start((event) => {
        seen.push(event);
      });
      await rig.harness.lane("side");
      await deliveredSoFar(rig.harness);
      expect(seen).toEqual([{ type: "lane_created", lane: "side", at: null }]);
      expect((await watch.resnapshot()).lanes.map((lane) => lane.name)).toEqual(["main", "side"]);
      watch.unsubscribe();
    });
  });
});

function withoutLivePartial(event: HarnessEvent): HarnessEvent | { type: string; runId?: string } {
  if (event.type === "message_update") return { type: event.type, runId: event.runId };
  if (event.type === "message_start" && event.message.role === "assistant") return { type: event.type, ...(event.runId !== undefined && { runId: event.runId }) };
  return event;
}
