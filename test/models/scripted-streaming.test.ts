import type { DeferredHandle } from "@earendil-works/pi-ai";
import { isRetryableAssistantError } from "@earendil-works/pi-ai/utils/retry";
import { describe, expect, it } from "vitest";
import { ABORTED_MESSAGE } from "../../models/scripted/playback.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { deltas, drain, memorySource, playScript, scriptedModel, scriptedRegistry, userContext } from "./helpers.ts";

// Chunked streaming, aborts (before and mid-stream) and deferred responses, all through the
// registry's real Models path. No assertion depends on timing: only on event content and order.

function handleOf(message: { deferred?: DeferredHandle }): DeferredHandle {
  if (!message.deferred) throw new Error("expected a deferred handle");
  return message.deferred;
}

describe("chunkMs", () => {
  it("streams text one word per text_delta, the deltas adding up to the text", async () => {
    const { models } = scriptedRegistry([{ text: "one two  three four", chunkMs: 1 }]);
    const played = await playScript(models);
    expect(deltas(played, "text_delta")).toEqual(["one ", "two  ", "three ", "four"]);
    expect(played.types).toEqual(["start", "text_start", ...Array(4).fill("text_delta"), "text_end", "done"]);
    expect(played.message.content).toEqual([{ type: "text", text: "one two  three four" }]);
  });

  it("chunks thinking, text and tool-call arguments alike", async () => {
    const { models } = scriptedRegistry([
      { thinking: "a b c", text: "d e", chunkMs: 1 },
      { toolCalls: [{ name: "write", arguments: { path: "notes/today.md", content: "a fairly long body" } }], chunkMs: 1 },
    ]);
    const thought = await playScript(models);
    expect(deltas(thought, "thinking_delta")).toEqual(["a ", "b ", "c"]);
    expect(deltas(thought, "text_delta")).toEqual(["d ", "e"]);
    const called = await playScript(models);
    const json = deltas(called, "toolcall_delta");
    expect(json.length).toBeGreaterThan(1);
    expect(JSON.parse(json.join(""))).toEqual({ path: "notes/today.md", content: "a fairly long body" });
    expect(called.message.content).toEqual([
      { type: "toolCall", id: "call_1", name: "write", arguments: { path: "notes/today.md", content: "a fairly long body" } },
    ]);
  });
});

describe("clock", () => {
  it("an injected clock stamps the response and serves every wait", async () => {
    const waits: number[] = [];
    const clock = { now: () => 1_700_000_000_000, sleep: async (ms: number) => void waits.push(ms) };
    const source = memorySource([{ text: "a b c", delayMs: 600_000, chunkMs: 30_000 }]);
    const models = createModelRegistry({ scripted: true, scriptSource: () => source, clock });
    const played = await playScript(models);
    expect(played.message).toMatchObject({ timestamp: 1_700_000_000_000, content: [{ type: "text", text: "a b c" }] });
    expect(waits).toEqual([600_000, 30_000, 30_000]);
  });
});

describe("abort (options.signal)", () => {
  it("mid-stream: ends with error{aborted} carrying the partial text streamed so far", async () => {
    const { models } = scriptedRegistry([{ text: "one two three four five six", chunkMs: 5 }]);
    const controller = new AbortController();
    const stream = models.streamSimple(scriptedModel(models, "script"), userContext("go"), { signal: controller.signal });
    const played = await drain(stream, (event) => {
      if (event.type === "text_delta") controller.abort();
    });
    expect(played.types).toEqual(["start", "text_start", "text_delta", "error"]);
    expect(played.events.at(-1)).toMatchObject({ type: "error", reason: "aborted" });
    expect(played.message).toMatchObject({
      stopReason: "aborted",
      errorMessage: ABORTED_MESSAGE,
      content: [{ type: "text", text: "one " }],
    });
    expect(isRetryableAssistantError(played.message)).toBe(false);
  });

  it("mid-stream after a finished block keeps that block and the partial one", async () => {
    const { models } = scriptedRegistry([{ thinking: "hmm", text: "alpha beta gamma", chunkMs: 5 }]);
    const controller = new AbortController();
    const stream = models.streamSimple(scriptedModel(models, "script"), userContext("go"), { signal: controller.signal });
    const played = await drain(stream, (event) => {
      if (event.type === "text_delta" && event.delta === "beta ") controller.abort();
    });
    expect(played.types.at(-1)).toBe("error");
    expect(played.message.content).toEqual([
      { type: "thinking", thinking: "hmm" },
      { type: "text", text: "alpha beta " },
    ]);
  });

  it("before the request: error{aborted} without a start, and the script step is not taken", async () => {
    const { models, source } = scriptedRegistry([{ text: "kept" }]);
    const controller = new AbortController();
    controller.abort();
    const played = await drain(
      models.streamSimple(scriptedModel(models, "script"), userContext("go"), { signal: controller.signal }),
    );
    expect(played.types).toEqual(["error"]);
    expect(played.events[0]).toMatchObject({ type: "error", reason: "aborted" });
    expect(played.message.stopReason).toBe("aborted");
    expect(source.taken).toBe(0);
    expect((await playScript(models)).message.content).toEqual([{ type: "text", text: "kept" }]);
  });

  it("during delayMs: error{aborted} without a start (the admitted step is consumed)", async () => {
    const steps = memorySource([{ text: "never", delayMs: 600_000 }, { text: "next" }]);
    const controller = new AbortController();
    // Abort once the request has been admitted (its step taken), while it waits out delayMs.
    const source = {
      takeStep: async () => {
        const step = await steps.takeStep();
        setTimeout(() => controller.abort(), 1);
        return step;
      },
    };
    const models = createModelRegistry({ scripted: true, scriptSource: () => source });
    const stream = models.streamSimple(scriptedModel(models, "script"), userContext("go"), { signal: controller.signal });
    const played = await drain(stream);
    expect(played.types).toEqual(["error"]);
    expect(played.message).toMatchObject({ stopReason: "aborted", content: [] });
    expect(steps.taken).toBe(1);
    expect((await playScript(models)).message.content).toEqual([{ type: "text", text: "next" }]);
  });
});

describe("deferred", () => {
  it("answers done{deferred} with a handle; streamDeferred plays the ready step; cancelDeferred is a no-op", async () => {
    const { models } = scriptedRegistry([{ deferred: { pollAfterMs: 250, ready: { text: "finally" } } }]);
    const model = scriptedModel(models, "script");
    const submitted = await playScript(models, userContext("12345678"));
    expect(submitted.types).toEqual(["start", "done"]);
    expect(submitted.events[1]).toMatchObject({ type: "done", reason: "deferred" });
    expect(submitted.message).toMatchObject({ stopReason: "deferred", content: [] });
    expect(submitted.message.usage.totalTokens).toBe(0);
    const handle = handleOf(submitted.message);
    expect(handle).toMatchObject({ provider: "scripted", modelId: "script", api: "scripted", pollAfterMs: 250 });
    expect(handle.id).toMatch(/^deferred_/);
    expect(handle.data).toMatchObject({ ready: { text: "finally" } });

    // The handle is plain JSON: it survives storage and is all the poll needs.
    const stored: DeferredHandle = JSON.parse(JSON.stringify(handle));
    const polled = await drain(models.streamDeferred(model, stored, { wait: 0 }));
    expect(polled.types).toEqual(["start", "text_start", "text_delta", "text_end", "done"]);
    expect(polled.message).toMatchObject({ stopReason: "stop", content: [{ type: "text", text: "finally" }] });
    expect(polled.message.usage).toMatchObject({ input: 2, output: 2 });
    expect((await models.fetchDeferred(model, stored)).content).toEqual([{ type: "text", text: "finally" }]);
    await expect(models.cancelDeferred(model, stored)).resolves.toBeUndefined();
  });

  it("a ready step may be any step: an error, tool calls, or another deferral (still pending)", async () => {
    const { models } = scriptedRegistry([
      { deferred: { ready: { error: "batch failed", retryable: true } } },
      { deferred: { ready: { deferred: { ready: { toolCalls: [{ name: "ls", arguments: {} }] } } } } },
    ]);
    const model = scriptedModel(models, "script");
    const failed = await models.fetchDeferred(model, handleOf((await playScript(models)).message));
    expect(failed.stopReason).toBe("error");
    expect(isRetryableAssistantError(failed)).toBe(true);
    const pending = await models.fetchDeferred(model, handleOf((await playScript(models)).message));
    expect(pending.stopReason).toBe("deferred");
    const ready = await models.fetchDeferred(model, handleOf(pending));
    expect(ready).toMatchObject({ stopReason: "toolUse", content: [{ type: "toolCall", id: "call_1", name: "ls" }] });
  });

  it("a handle that is not this model's, or carries no ready step, polls to an error", async () => {
    const { models } = scriptedRegistry();
    const model = scriptedModel(models, "script");
    const foreign = await models.fetchDeferred(model, { provider: "scripted", modelId: "echo", api: "scripted", id: "x" });
    expect(foreign).toMatchObject({ stopReason: "error", errorMessage: expect.stringContaining("belongs to") });
    const empty = await models.fetchDeferred(model, { provider: "scripted", modelId: "script", api: "scripted", id: "y" });
    expect(empty).toMatchObject({ stopReason: "error", errorMessage: expect.stringContaining("no ready step") });
    const invalid = await models.fetchDeferred(model, {
      provider: "scripted",
      modelId: "script",
      api: "scripted",
      id: "z",
      data: { ready: { nope: true } },
    });
    expect(invalid).toMatchObject({ stopReason: "error", errorMessage: expect.stringContaining("is invalid") });
  });
});
