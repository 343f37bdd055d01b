import { describe, expect, it } from "vitest";
import { ProgressWriter } from "../../harness/runtime/drive/progress.ts";
import { laneConfig, pendingAssistantFrames } from "../../harness/session/builtin-addresses.ts";
import { appendList } from "../../harness/session/writes.ts";
import type { LaneConfiguration } from "../../schema/lane.ts";
import { ECHO, SCRIPT } from "./helpers.ts";
import { deferred, ofType, settledRecord, sleep, unwrap, withDriveRig } from "./drive-helpers.ts";

// Engine hardening, lane commands: each test reproduces one defect found in review.

describe("hardening 1: configuration setters decide on the line (no lost update)", () => {
  it("setModel then setThinkingLevel without awaiting the first: storage, projection and events all agree", async () => {
    const result = await withDriveRig(async ({ harness, session, events }) => {
      const lane = await harness.lane("main");
      const model = lane.setModel(ECHO);
      const thinking = lane.setThinkingLevel("high");
      const tools = lane.setActiveTools([]);
      await Promise.all([model, thinking, tools]);
      return {
        stored: session.getValue(laneConfig<LaneConfiguration>("main"))?.value,
        projected: lane.inspectExecution().configuration,
        updates: ofType(events, "config_update").map(({ property, value, previous }) => ({ property, value, previous })),
      };
    });
    const expected: LaneConfiguration = { model: ECHO, thinkingLevel: "high", activeToolNames: [] };
    expect(result.stored).toEqual(expected);
    expect(result.projected).toEqual(expected);
    expect(result.updates).toEqual([
      { property: "model", value: ECHO, previous: SCRIPT },
      { property: "thinkingLevel", value: "high", previous: "off" },
      { property: "activeTools", value: [], previous: [] },
    ]);
  });
});

describe("hardening 8: a run ends without reading its context when no before_run_end handler exists", () => {
  it("a run without a handler assembles its context once (for the request); with one, once more at run end", async () => {
    const result = await withDriveRig(async ({ harness }) => {
      // Without compaction: the start's threshold probe would read the (cached) path as well.
      await harness.updateSettings({ compaction: { enabled: false, reserveTokens: 16384, keepRecentTokens: 20000 } });
      const lane = await harness.lane("main");
      let reads = 0;
      const read = lane.contextPath.bind(lane);
      lane.contextPath = () => {
        reads++;
        return read();
      };
      const countReads = async (run: () => Promise<void>): Promise<number> => {
        const before = reads;
        await run();
        return reads - before;
      };
      const prompt = async () => {
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hi" }));
        settledRecord(await lane.drive({ operationId }));
      };
      const without = await countReads(prompt);
      let seen = 0;
      harness.hooks.on("before_run_end", (event) => {
        seen = event.messages.length;
        return undefined;
      });
      const withHandler = await countReads(prompt);
      return { without, withHandler, seen };
    }, { model: ECHO });
    expect(result.without).toBe(1);
    expect(result.withHandler).toBe(2);
    expect(result.seen).toBe(4);
  });
});

describe("hardening 10: setName / setLabel bind value_update inside their committing mutation", () => {
  it("every value_update batch is emitted while its mutation holds the line (§5.2: bound on the line)", async () => {
    const result = await withDriveRig(async ({ harness, session }) => {
      const lane = await harness.lane("main");
      const appended = unwrap(await lane.appendMessage({ role: "user", content: "x", timestamp: 1 }));
      let holding = 0;
      const begin = session.beginMutation.bind(session);
      session.beginMutation = async () => {
        const scope = await begin();
        holding++;
        const end = scope.end.bind(scope);
        scope.end = () => {
          holding--;
          end();
        };
        return scope;
      };
      const emitted: { type: string; onLine: boolean }[] = [];
      const emit = harness.events.emitBatch.bind(harness.events);
      harness.events.emitBatch = (batch) => {
        for (const event of batch) emitted.push({ type: event.type, onLine: holding > 0 });
        return emit(batch);
      };
      await harness.setName("renamed");
      await harness.setLabel(appended.entryId, "tag");
      await harness.setLabel(appended.entryId, undefined);
      return emitted;
    });
    expect(result).toEqual([
      { type: "value_update", onLine: true },
      { type: "value_update", onLine: true },
      { type: "value_update", onLine: true },
    ]);
  });
});

describe("hardening 4: requestAbort signals the live pass, even one installed after the call", () => {
  it("a drive({waitForRetry:true}) installed between the call and the marker commit is woken from its backoff", async () => {
    const result = await withDriveRig(
      async ({ harness, session }) => {
        await harness.updateSettings({ retry: { enabled: true, maxRetries: 3, baseDelayMs: 600_000 } });
        const lane = await harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
        const waiting = unwrap(await lane.drive({ operationId }));
        // Hold the line so the marker commits only after the new pass is asleep in its backoff.
        const scope = await session.beginMutation();
        const abort = lane.requestAbort(operationId);
        const entered = deferred();
        harness.hooks.on("before_drive", () => entered.resolve());
        const driven = lane.drive({ operationId, waitForRetry: true });
        await entered.promise;
        // The pass reaches its gated timer within the microtasks that follow its before_drive.
        await sleep(0);
        scope.end();
        const marked = unwrap(await abort);
        const outcome = await Promise.race([driven, sleep(5_000).then(() => "still asleep" as const)]);
        return { waiting, marked, outcome: outcome === "still asleep" ? outcome : settledRecord(outcome).status };
      },
      { steps: [{ error: "flaky", retryable: true }] },
    );
    expect(result.waiting).toMatchObject({ kind: "waiting", reason: "retry" });
    expect(result.marked.newlyRequested).toBe(true);
    expect(result.outcome).toBe("aborted");
  });

  it("a hook admitted by a pass installed after the call sees the abort signal", async () => {
    const result = await withDriveRig(async ({ harness, session }) => {
      const lane = await harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
      const entered = deferred<AbortSignal>();
      harness.hooks.on("before_drive", (_event, ctx) => {
        entered.resolve(ctx.signal);
        return new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
      });
      const scope = await session.beginMutation();
      const abort = lane.requestAbort(operationId);
      const driven = lane.drive({ operationId });
      const signal = await entered.promise;
      scope.end();
      unwrap(await abort);
      const outcome = await Promise.race([driven, sleep(5_000).then(() => "hook never signalled" as const)]);
      return { aborted: signal.aborted, outcome: outcome === "hook never signalled" ? outcome : settledRecord(outcome).status };
    });
    expect(result.aborted).toBe(true);
    expect(result.outcome).toBe("aborted");
  });
});

describe("hardening 12: the drive's deferred permit is real, and progress writes are fenced", () => {
  it("a pass installed with pollDeferred holds one permit; a joiner's options never add one", async () => {
    const result = await withDriveRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
      const entered = deferred();
      const release = deferred();
      harness.hooks.on("before_drive", async () => {
        entered.resolve();
        await release.promise;
      });
      const installed = lane.drive({ operationId, pollDeferred: true });
      await entered.promise;
      const first = lane.passInfo();
      const joined = lane.drive({ operationId, waitForRetry: true });
      const afterJoin = lane.passInfo();
      release.resolve();
      await Promise.all([installed, joined]);
      const plainId = unwrap(await lane.accept({ kind: "prompt", prompt: "again" })).operationId;
      const plain = lane.drive({ operationId: plainId });
      const plainInfo = lane.passInfo();
      await plain;
      return { first, afterJoin, plainInfo, operationId };
    }, { model: ECHO });
    expect(result.first).toEqual({ operationId: result.operationId, waitForRetry: false, deferredPermits: 1 });
    expect(result.afterJoin).toEqual(result.first);
    expect(result.plainInfo?.deferredPermits).toBe(0);
  });

  it("a progress write that reaches the line after its leaf settled writes nothing", async () => {
    const result = await withDriveRig(async ({ harness, session }) => {
      const lane = await harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }));
      settledRecord(await lane.drive({ operationId }));
      // A writer of that (now settled) operation, as a late frame of its stream would use it.
      const core = { session, assertUnfaulted: () => {}, fault: (error: unknown) => (error instanceof Error ? error : new Error(String(error))) };
      const writer = new ProgressWriter({ core, lane, operationId, gate: { closeSignal: new AbortController().signal } }, (state) => state.at === "assistant.effect_pending");
      const address = pendingAssistantFrames(operationId, "late");
      writer.write([appendList(address, { k: "delta", blocks: [] })]);
      await writer.flushed();
      return { fenced: writer.fenced, stored: session.readList(address).length };
    }, { model: ECHO });
    expect(result.fenced).toBe(1);
    expect(result.stored).toBe(0);
  });
});
