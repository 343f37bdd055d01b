import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { createSession } from "../helpers/sessions.ts";
import { ECHO } from "./helpers.ts";
import { acceptPrompt, attach, never, settledRecord, until, type Attached } from "./crash-rig.ts";
import { foldAndCapture, foldEvents, openWatched, type Watched } from "./watch-fold.ts";

// Fold equivalence (reference §5.4 "required conformance", ARCHITECTURE D13): for each flow, a
// watch opened before it, folded with reduceLaneSnapshot over its own events, equals a fresh watch
// snapshot at every quiescent point. The captured snapshot itself is never mutated by the fold.

const LONG = Array.from({ length: 300 }, (_, i) => `x${i}`).join(" ");

interface Ctx {
  rig: Attached;
  lane: AgentLane;
  /** Moves the harness clock forward (retry deadlines). */
  advance(ms: number): void;
}

async function withLane<T>(steps: ScriptStep[], body: (ctx: Ctx) => Promise<T>, settings?: HarnessSettingsPatch): Promise<T> {
  const { stub } = await createSession("fold");
  return runInDurableObject(stub, async (instance: SessionObject) => {
    await appendScriptSteps(instance.session(), steps);
    let offset = 0;
    const rig = await attach(instance, { clock: () => Date.now() + offset });
    if (settings) await rig.harness.updateSettings(settings);
    const lane = await rig.harness.lane("main");
    return body({ rig, lane, advance: (ms) => void (offset += ms) });
  });
}

/** The conformance assertion at one quiescent point. */
async function expectEquivalent({ rig, lane }: Ctx, watched: Watched): Promise<void> {
  const { folded, fresh } = await foldAndCapture(rig.harness, lane, watched);
  expect(folded).toStrictEqual(fresh);
  expect(watched.watch.snapshot).toStrictEqual(watched.captured);
}

describe("fold equivalence", () => {
  it("prompt → stop; resnapshot returns a fresh equal snapshot", async () => {
    await withLane([{ text: "hi there" }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      expect((await ctx.lane.prompt("hello")).ok).toBe(true);
      await expectEquivalent(ctx, watched);
      const { fresh } = await foldAndCapture(ctx.rig.harness, ctx.lane, watched);
      const again = await watched.watch.resnapshot();
      expect(again).toStrictEqual(fresh);
      expect(again).not.toBe(fresh);
      expect(fresh.lastResult?.status).toBe("completed");
    });
  });

  it("multi-turn with synthetic tool results", async () => {
    await withLane([{ toolCalls: [{ name: "lookup", arguments: { q: "a" } }, { name: "find", arguments: {} }] }, { text: "done" }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      expect((await ctx.lane.prompt("use tools")).ok).toBe(true);
      await expectEquivalent(ctx, watched);
      expect(watched.events.filter((event) => event.type === "tool_end")).toHaveLength(2);
    });
  });

  it("a retry wait (durable wait), then the successful attempt", async () => {
    const settings = { retry: { enabled: true, maxRetries: 2, baseDelayMs: 60_000 } };
    await withLane([{ error: "overloaded", retryable: true }, { text: "second time lucky" }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      const operationId = await acceptPrompt(ctx.lane, "try");
      const waiting = await ctx.lane.drive({ operationId, waitForRetry: false });
      expect(waiting.ok && waiting.value.kind).toBe("waiting");
      await expectEquivalent(ctx, watched);
      const { fresh } = await foldAndCapture(ctx.rig.harness, ctx.lane, watched);
      expect(fresh.operation?.retry).toMatchObject({ attempt: 2, maxAttempts: 3 });
      ctx.advance(61_000);
      expect(settledRecord(await ctx.lane.drive({ operationId, waitForRetry: false })).status).toBe("completed");
      await expectEquivalent(ctx, watched);
    }, settings);
  });

  it("abort mid-stream drains steer, keeps nextRun, ends aborted", async () => {
    await withLane([{ text: LONG, chunkMs: 3 }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      const operationId = await acceptPrompt(ctx.lane, "stream");
      const pass = ctx.lane.drive({ operationId });
      await until(() => ctx.rig.events.some((event) => event.type === "message_update"), "streaming");
      expect((await ctx.lane.steer("steer me")).ok).toBe(true);
      expect((await ctx.lane.nextRun("next time")).ok).toBe(true);
      const aborted = await ctx.lane.abort();
      expect(aborted.ok && aborted.value.steer).toHaveLength(1);
      expect(settledRecord(await pass).status).toBe("aborted");
      await expectEquivalent(ctx, watched);
    });
  });

  it("queue updates: steer / followUp / nextRun, cancelQueued, then acceptance captures them", async () => {
    await withLane([{ text: "answer" }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      const next = await ctx.lane.nextRun("queued for next run");
      const follow = await ctx.lane.followUp("follow up");
      const steer = await ctx.lane.steer("steer");
      if (!next.ok || !follow.ok || !steer.ok) throw new Error("enqueue failed");
      expect(await ctx.lane.cancelQueued(follow.value.entryId)).toEqual({ ok: true, value: { kind: "cancelled" } });
      await expectEquivalent(ctx, watched);
      expect((await ctx.lane.prompt("now")).ok).toBe(true);
      expect(await ctx.lane.cancelQueued(steer.value.entryId)).toEqual({ ok: true, value: { kind: "already_consumed" } });
      await expectEquivalent(ctx, watched);
    });
  });

  it("config_update via setModel / setThinkingLevel / setActiveTools, a run failing on them, then a run that completes", async () => {
    await withLane([], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      expect((await ctx.lane.setModel(ECHO)).ok).toBe(true);
      expect((await ctx.lane.setThinkingLevel("high")).ok).toBe(true);
      expect((await ctx.lane.setActiveTools(["lookup"])).ok).toBe(true);
      await expectEquivalent(ctx, watched);
      const failed = await ctx.lane.prompt("tools are missing");
      expect(failed.ok && "status" in failed.value && failed.value).toMatchObject({ status: "failed", error: { code: "configured_tools_unavailable" } });
      await expectEquivalent(ctx, watched);
      expect((await ctx.lane.setActiveTools([])).ok).toBe(true);
      expect((await ctx.lane.prompt("echo me")).ok).toBe(true);
      await expectEquivalent(ctx, watched);
    });
  });

  it("recordUsage adjustment rows between runs", async () => {
    await withLane([{ text: "counted", usage: { input: 11, output: 4 } }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      expect((await ctx.lane.recordUsage({ ...zeroUsage(), input: 5, output: 3, totalTokens: 8 })).ok).toBe(true);
      await expectEquivalent(ctx, watched);
      expect((await ctx.lane.prompt("count")).ok).toBe(true);
      const tip = ctx.lane.getTipId() ?? undefined;
      expect((await ctx.lane.recordUsage({ ...zeroUsage(), output: 2, totalTokens: 2 }, { ...(tip && { entryId: tip }), details: { why: "fix" } })).ok).toBe(true);
      await expectEquivalent(ctx, watched);
    });
  });

  it("a run that fails on a non-retryable provider error", async () => {
    await withLane([{ error: "bad request", retryable: false }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      const result = await ctx.lane.prompt("fail");
      expect(result.ok && "status" in result.value && result.value.status).toBe("failed");
      await expectEquivalent(ctx, watched);
    });
  });

  it("a watch opened mid-run, while streaming, folds to the final snapshot", async () => {
    await withLane([{ text: LONG, chunkMs: 4 }], async (ctx) => {
      const operationId = await acceptPrompt(ctx.lane, "stream");
      const pass = ctx.lane.drive({ operationId });
      await until(() => ctx.rig.events.some((event) => event.type === "message_update"), "streaming");
      const watched = await openWatched(ctx.lane);
      expect(watched.captured.operation).toMatchObject({ id: operationId, status: "open" });
      expect(watched.captured.operation?.streamingMessage?.stopReason).toBe("pending");
      expect(settledRecord(await pass).status).toBe("completed");
      await expectEquivalent(ctx, watched);
    });
  });

  it("settled-but-unplaced tools: a capture between staging and placement shows the settled row", async () => {
    await withLane([{ toolCalls: [{ name: "lookup", arguments: { q: "z" } }] }, { text: "after" }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      // Registered after the watch: the watch receives tool_end, then this parks the pass before placement.
      ctx.rig.harness.events.on("tool_end", () => never());
      const operationId = await acceptPrompt(ctx.lane, "tool");
      void ctx.lane.drive({ operationId }).catch(() => undefined);
      await until(() => watched.events.some((event) => event.type === "tool_end"), "tool_end");
      expect(ctx.lane.state.operation?.state.at).toBe("tools");
      // The bus is parked, so no delivery barrier: the watch already holds every bound event.
      const later = await ctx.lane.watch();
      later.unsubscribe();
      const folded = foldEvents(watched.watch.snapshot, watched.events);
      expect(folded.operation?.runningTools).toMatchObject([{ status: "settled", toolName: "lookup", args: { q: "z" }, isError: true }]);
      expect(folded).toStrictEqual(later.snapshot);
    });
  });

  it("events of another lane: only the session-wide stats move", async () => {
    await withLane([{ text: "main answer" }, { text: "side answer" }], async (ctx) => {
      const watched = await openWatched(ctx.lane);
      expect((await ctx.lane.prompt("on main")).ok).toBe(true);
      const side = await ctx.rig.harness.lane("side");
      expect((await side.prompt("on side")).ok).toBe(true);
      await expectEquivalent(ctx, watched);
    });
  });
});
