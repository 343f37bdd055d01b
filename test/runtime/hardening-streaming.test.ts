import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { WatchHandle } from "../../harness/runtime/watch.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { HarnessEvent, LaneSnapshot } from "../../schema/lane.ts";
import { createSession } from "../helpers/sessions.ts";
import { SCRIPT } from "./helpers.ts";
import { acceptPrompt, attach } from "./crash-rig.ts";
import { deliveredSoFar, foldEvents } from "./watch-fold.ts";

// Engine hardening, streaming: each test reproduces one defect found in review.

const WORDS = Array.from({ length: 12 }, (_, i) => `word${i}`).join(" ");

interface Capture {
  watch: WatchHandle;
  events: HarnessEvent[];
  hadStreaming: boolean;
}

async function capture(watchOf: () => Promise<WatchHandle>): Promise<Capture> {
  const watch = await watchOf();
  const events: HarnessEvent[] = [];
  watch.start((event) => void events.push(event));
  return { watch, events, hadStreaming: watch.snapshot.operation?.streamingMessage !== undefined };
}

describe("hardening 3: no ghost streamingMessage after the response ends", () => {
  it("snapshots captured between the end of the stream and its settlement fold to the snapshot of the retry wait that follows", async () => {
    const { stub } = await createSession("ghost");
    const result = await runInDurableObject(stub, async (instance: SessionObject) => {
      // Chunks 60 ms apart: the response outlives a 250 ms frame window, so progress frames are committed.
      await appendScriptSteps(instance.session(), [{ text: WORDS, chunkMs: 60 }]);
      const rig = await attach(instance);
      await rig.harness.updateSettings({ retry: { enabled: true, maxRetries: 2, baseDelayMs: 600_000 } });
      const lane = await rig.harness.lane("main");
      await lane.setModel(SCRIPT);
      const captures: Promise<Capture>[] = [];
      const held = (): Promise<Capture> => {
        const taken = capture(() => lane.watch());
        captures.push(taken);
        return taken;
      };
      // Between the end of the provider stream and the settlement commit: after_response runs there.
      // It also turns the answer into a retryable failure, so the operation stays open in a retry wait.
      rig.harness.hooks.on("after_response", async (event) => {
        await held();
        return { message: { ...event.message, stopReason: "error", errorMessage: "503 service unavailable" } };
      });
      // And wherever message_end of the live response is delivered (the pass awaits its delivery).
      rig.harness.events.on("message_end", async (event) => {
        if (event.runId !== undefined && event.message.role === "assistant") await held();
      });
      const operationId = await acceptPrompt(lane, "stream please");
      const outcome = await lane.drive({ operationId });
      await deliveredSoFar(rig.harness);
      const later = await lane.watch();
      later.unsubscribe();
      const folded: LaneSnapshot[] = [];
      const streamedAtCapture: boolean[] = [];
      for (const pending of captures) {
        const { watch, events, hadStreaming } = await pending;
        folded.push(foldEvents(watch.snapshot, events));
        streamedAtCapture.push(hadStreaming);
      }
      return { outcome: outcome.ok ? outcome.value.kind : "failed", folded, fresh: later.snapshot, streamedAtCapture };
    });
    expect(result.outcome).toBe("waiting");
    expect(result.fresh.operation?.retry).toBeDefined();
    expect(result.fresh.operation?.streamingMessage).toBeUndefined();
    expect(result.streamedAtCapture).toHaveLength(2);
    for (const folded of result.folded) expect(folded).toStrictEqual(result.fresh);
  });
});

describe("hardening 7: streaming costs do not grow with the response length", () => {
  it("the live partial is copied per emitted event, not per delta: bytes cloned stay linear in the response", async () => {
    const words = 2_000;
    const text = Array.from({ length: words }, (_, i) => `w${i % 10}`).join(" ");
    const { stub } = await createSession("stream-cost");
    const result = await runInDurableObject(stub, async (instance: SessionObject) => {
      // chunkMs 0: one delta per word, with no wait between them.
      await appendScriptSteps(instance.session(), [{ text, chunkMs: 0 }]);
      const rig = await attach(instance);
      const lane = await rig.harness.lane("main");
      await lane.setModel(SCRIPT);
      let deltas = 0;
      rig.harness.events.on("message_update", () => void deltas++);
      const clone = globalThis.structuredClone;
      let clonedChars = 0;
      globalThis.structuredClone = <T>(value: T, options?: StructuredSerializeOptions): T => {
        clonedChars += JSON.stringify(value)?.length ?? 0;
        return clone(value, options);
      };
      try {
        const operationId = await acceptPrompt(lane, "a long answer please");
        const outcome = await lane.drive({ operationId });
        return { settled: outcome.ok && outcome.value.kind === "settled", clonedChars, updates: deltas };
      } finally {
        globalThis.structuredClone = clone;
      }
    });
    expect(result.settled).toBe(true);
    // Quadratic copying (one clone of the growing partial per delta) would be ≈ words²/2 × 3 chars ≈ 6 MB.
    expect(result.clonedChars).toBeLessThan(40 * text.length);
  });
});

describe("hardening 9: openWatch().resnapshot() holds later events until the new snapshot is installed", () => {
  it("an event committed after the new capture folds into the new replica, not the old one", async () => {
    const { stub } = await createSession("resnapshot");
    const result = await runInDurableObject(stub, async (instance: SessionObject) => {
      const rig = await attach(instance);
      const lane = await rig.harness.lane("main");
      const watch = await lane.watch();
      let replica = watch.snapshot;
      const fold = (event: HarnessEvent) => void (replica = foldEvents(replica, [event]));
      watch.start(fold);
      const next = watch.resnapshot();
      // Committed (and delivered, as far as the bus goes) after the capture, before the caller installs it.
      await lane.steer("after the capture");
      await deliveredSoFar(rig.harness);
      replica = await next;
      watch.start(fold);
      await deliveredSoFar(rig.harness);
      const fresh = await lane.watch();
      fresh.unsubscribe();
      return { replica, fresh: fresh.snapshot };
    });
    expect(result.fresh.queues).toHaveLength(1);
    expect(result.replica).toStrictEqual(result.fresh);
  });
});
