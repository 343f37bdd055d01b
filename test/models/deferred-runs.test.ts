import { describe, expect, it } from "vitest";
import { OPENAI_POLL_AFTER_MS } from "../../models/deferred/openai-background.ts";
import { ANTHROPIC_POLL_AFTER_MS } from "../../models/deferred/anthropic-batch.ts";
import type { Entry } from "../../schema/entries.ts";
import { manualClock, settledRecord, unwrap } from "../runtime/drive-helpers.ts";
import { anthropicStream, responsesStream } from "./family-wires.ts";
import { ANTHROPIC_BATCH_ID, anthropicWire, OPENAI_RESPONSE_ID, openaiWire } from "./deferred-wires.ts";
import { withProviderRig } from "./provider-rig.ts";
import { wireFetch } from "./wire.ts";

// Whole deferred runs on real providers: the session's `streamOptions.deferred` reaches the
// provider through the real engine, the run suspends on the provider's handle, waits out
// `pollAfterMs`, polls (still pending, then done) and completes; an abort cancels at the provider.

const GPT = { provider: "openai", modelId: "gpt-5" } as const;
const CLAUDE = { provider: "anthropic", modelId: "claude-sonnet-4-5" } as const;

const assistantStops = (entries: readonly Entry[]): string[] =>
  entries.flatMap((entry) => (entry.type === "message" && entry.message.role === "assistant" ? [entry.message.stopReason] : []));

describe("deferred runs on hosted providers", { timeout: 30_000 }, () => {
  it("OpenAI: suspends on the background response, polls after pollAfterMs, and completes with its answer", async () => {
    const clock = manualClock();
    const wire = wireFetch([openaiWire.created(), openaiWire.status("in_progress"), openaiWire.completed("It is 4.")]);
    const result = await withProviderRig(
      async ({ harness }) => {
        await harness.updateSettings({ streamOptions: { deferred: true } });
        const lane = await harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "What is 2 + 2?" }));
        const suspended = unwrap(await lane.drive({ operationId }));
        // Before pollAfterMs has passed a permit polls nothing.
        const early = unwrap(await lane.drive({ operationId, pollDeferred: true }));
        const requestsBefore = wire.seen.length;
        // Entries are stamped by the session's own clock (real time): step well past pollAfterMs.
        clock.advance(OPENAI_POLL_AFTER_MS + 60_000);
        const pending = unwrap(await lane.drive({ operationId, pollDeferred: true }));
        // The pending poll's entry now holds the handle: its pollAfterMs counts from there.
        clock.advance(OPENAI_POLL_AFTER_MS + 60_000);
        const record = settledRecord(await lane.drive({ operationId, pollDeferred: true }));
        const entries = lane.findEntries({ order: "oldestFirst" });
        return { suspended, early, requestsBefore, pending, record, stops: assistantStops(entries), last: entries.at(-1) };
      },
      { model: GPT, fetch: wire.fetch, clock },
    );
    expect(result.suspended).toMatchObject({ kind: "waiting", reason: "deferred", deferred: { id: OPENAI_RESPONSE_ID } });
    expect(result.early).toMatchObject({ kind: "waiting", reason: "deferred" });
    expect(result.requestsBefore).toBe(1);
    expect(result.pending).toMatchObject({ kind: "waiting", reason: "deferred" });
    expect(result.record.status).toBe("completed");
    expect(result.stops).toEqual(["deferred", "deferred", "stop"]);
    expect(result.last).toMatchObject({ type: "message", message: { role: "assistant", content: expect.arrayContaining([expect.objectContaining({ type: "text", text: "It is 4." })]) } });
    expect(wire.seen[0]?.body).toMatchObject({ background: true, stream: false });
    expect(wire.remaining()).toBe(0);
  });

  it("Anthropic: an abort while the batch waits cancels it at the provider and ends the run aborted", async () => {
    const clock = manualClock();
    const wire = wireFetch([anthropicWire.created(), anthropicWire.cancelAnswer()]);
    const result = await withProviderRig(
      async ({ harness }) => {
        await harness.updateSettings({ streamOptions: { deferred: { window: "24h" } } });
        const lane = await harness.lane("main");
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "What is 2 + 2?" }));
        const suspended = unwrap(await lane.drive({ operationId }));
        clock.advance(ANTHROPIC_POLL_AFTER_MS / 2);
        unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await lane.drive({ operationId }));
        return { suspended, record };
      },
      { model: CLAUDE, fetch: wire.fetch, clock },
    );
    expect(result.suspended).toMatchObject({ kind: "waiting", reason: "deferred", deferred: { id: ANTHROPIC_BATCH_ID } });
    expect(result.record.status).toBe("aborted");
    expect(wire.seen.map((request) => request.url.split("?")[0])).toEqual([
      "https://api.anthropic.com/v1/messages/batches",
      `https://api.anthropic.com/v1/messages/batches/${ANTHROPIC_BATCH_ID}/cancel`,
    ]);
  });

  it("a run's own deferred mode wins over the session's, both ways", async () => {
    const wire = wireFetch([openaiWire.created(), openaiWire.cancelAnswer(), { chunks: responsesStream("hm", ["live"], { input: 10, output: 1 }) }]);
    await withProviderRig(
      async ({ harness }) => {
        const lane = await harness.lane("main");
        const deferredRun = unwrap(await lane.accept({ kind: "prompt", prompt: "later", deferred: true }));
        expect(unwrap(await lane.drive({ operationId: deferredRun.operationId }))).toMatchObject({ kind: "waiting", reason: "deferred" });
        unwrap(await lane.requestAbort(deferredRun.operationId));
        await lane.drive({ operationId: deferredRun.operationId });
        await harness.updateSettings({ streamOptions: { deferred: true } });
        const liveRun = unwrap(await lane.accept({ kind: "prompt", prompt: "now", deferred: false }));
        expect(settledRecord(await lane.drive({ operationId: liveRun.operationId })).status).toBe("completed");
      },
      { model: GPT, fetch: wire.fetch },
    );
    const bodies = wire.seen.filter((request) => request.url.endsWith("/responses")).map((request) => request.body);
    expect(bodies[0]).toMatchObject({ background: true, stream: false });
    expect(bodies[1]).toMatchObject({ stream: true });
    expect(bodies[1]).not.toHaveProperty("background");
  });

  it("a compaction's summary request never defers, even when the session's runs do", async () => {
    const wire = wireFetch([{ chunks: anthropicStream("hm", ["Paris", "it", "is."], { input: 30, output: 4 }) }, { chunks: anthropicStream("hm", ["Summary."], { input: 60, output: 3 }) }]);
    const record = await withProviderRig(
      async ({ harness }) => {
        await harness.updateSettings({ compaction: { enabled: false, reserveTokens: 4000, keepRecentTokens: 1 } });
        const lane = await harness.lane("main");
        unwrap(await lane.prompt("What is the capital of France?"));
        await harness.updateSettings({ streamOptions: { deferred: true } });
        const { operationId } = unwrap(await lane.accept({ kind: "compaction" }));
        return settledRecord(await lane.drive({ operationId }));
      },
      { model: CLAUDE, fetch: wire.fetch },
    );
    expect(record.status).toBe("completed");
    expect(wire.seen.map((request) => new URL(request.url).pathname)).toEqual(["/v1/messages", "/v1/messages"]);
    expect(wire.seen[1]?.body).toMatchObject({ stream: true });
  });
});
