import type { AssistantMessage, Context } from "@earendil-works/pi-ai";
import { isContextOverflow, isRecoverableLength } from "@earendil-works/pi-ai/utils/overflow";
import { isRetryableAssistantError } from "@earendil-works/pi-ai/utils/retry";
import { describe, expect, it } from "vitest";
import { createModelRegistry } from "../../models/registry.ts";
import { EXHAUSTED_MESSAGE } from "../../models/scripted/respond.ts";
import { deltas, drain, playScript, scriptedModel, scriptedRegistry, userContext } from "./helpers.ts";

// The scripted provider through the real pi-ai Models path (`models.streamSimple`): the exact event
// sequence and final message of every step kind, and how pi-ai's classifiers read each response.

const zeroCost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };

describe("scripted/echo", () => {
  it("answers with the last user message's text, streamed as one text block", async () => {
    const { models } = scriptedRegistry();
    const model = scriptedModel(models, "echo");
    const context: Context = {
      systemPrompt: "be brief",
      messages: [
        { role: "user", content: "first", timestamp: 1 },
        { role: "user", content: [{ type: "text", text: "hello" }, { type: "image", data: "AAAA", mimeType: "image/png" }, { type: "text", text: "world" }], timestamp: 2 },
      ],
    };
    const played = await drain(models.streamSimple(model, context));
    expect(played.types).toEqual(["start", "text_start", "text_delta", "text_end", "done"]);
    expect(played.message).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "hello\nworld" }],
      api: "scripted",
      provider: "scripted",
      model: "echo",
      stopReason: "stop",
    });
    // "be brief" + "first" + "hello" + "world" = 23 chars → 6 tokens; "hello\nworld" = 11 chars → 3.
    expect(played.message.usage).toEqual({ input: 6, output: 3, cacheRead: 0, cacheWrite: 0, totalTokens: 9, cost: zeroCost });
    expect(played.events.at(-1)).toMatchObject({ type: "done", reason: "stop" });
  });

  it("answers an empty text when the context has no user message", async () => {
    const { models } = scriptedRegistry();
    const played = await drain(models.streamSimple(scriptedModel(models, "echo"), { messages: [] }));
    expect(played.types).toEqual(["start", "text_start", "text_end", "done"]);
    expect(played.message.content).toEqual([{ type: "text", text: "" }]);
  });
});

describe("scripted/script step kinds", () => {
  it("text: start, one text block, done{stop}", async () => {
    const { models } = scriptedRegistry([{ text: "Hi there" }]);
    const played = await playScript(models, userContext("12345678"));
    expect(played.types).toEqual(["start", "text_start", "text_delta", "text_end", "done"]);
    expect(deltas(played, "text_delta")).toEqual(["Hi there"]);
    expect(played.events[3]).toMatchObject({ type: "text_end", contentIndex: 0, content: "Hi there" });
    expect(played.message).toMatchObject({ content: [{ type: "text", text: "Hi there" }], stopReason: "stop", model: "script" });
    expect(played.message.usage).toEqual({ input: 2, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 4, cost: zeroCost });
  });

  it("thinking: a thinking block then a text block, with reasoning tokens in the usage", async () => {
    const { models } = scriptedRegistry([{ thinking: "let me think", text: "42" }]);
    const played = await playScript(models);
    expect(played.types).toEqual([
      "start",
      ...["thinking_start", "thinking_delta", "thinking_end"],
      ...["text_start", "text_delta", "text_end"],
      "done",
    ]);
    expect(played.events[3]).toMatchObject({ type: "thinking_end", contentIndex: 0, content: "let me think" });
    expect(played.events[6]).toMatchObject({ type: "text_end", contentIndex: 1, content: "42" });
    expect(played.message.content).toEqual([
      { type: "thinking", thinking: "let me think" },
      { type: "text", text: "42" },
    ]);
    expect(played.message.usage).toMatchObject({ output: 4, reasoning: 3 });
  });

  it("toolCalls: one toolcall block per call with ids call_<n>, done{toolUse}", async () => {
    const { models } = scriptedRegistry([
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }, { name: "ls", arguments: {} }] },
    ]);
    const played = await playScript(models);
    expect(played.types).toEqual([
      "start",
      ...["toolcall_start", "toolcall_delta", "toolcall_end"],
      ...["toolcall_start", "toolcall_delta", "toolcall_end"],
      "done",
    ]);
    expect(deltas(played, "toolcall_delta")).toEqual(['{"path":"a.txt"}', "{}"]);
    expect(played.events[3]).toMatchObject({
      type: "toolcall_end",
      contentIndex: 0,
      toolCall: { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.txt" } },
    });
    expect(played.message).toMatchObject({
      stopReason: "toolUse",
      content: [
        { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.txt" } },
        { type: "toolCall", id: "call_2", name: "ls", arguments: {} },
      ],
    });
    expect(played.events.at(-1)).toMatchObject({ type: "done", reason: "toolUse" });
  });

  it("toolCalls: ids continue after the calls already in the conversation; an empty list is a bare toolUse", async () => {
    const { models } = scriptedRegistry([{ toolCalls: [{ name: "cat", arguments: { f: 1 } }] }, { toolCalls: [] }]);
    const earlier: AssistantMessage = {
      role: "assistant",
      content: [{ type: "toolCall", id: "call_1", name: "ls", arguments: {} }],
      api: "scripted",
      provider: "scripted",
      model: "script",
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: zeroCost },
      stopReason: "toolUse",
      timestamp: 2,
    };
    const context: Context = {
      messages: [
        ...userContext("go").messages,
        earlier,
        { role: "toolResult", toolCallId: "call_1", toolName: "ls", content: [{ type: "text", text: "a.txt" }], isError: false, timestamp: 3 },
      ],
    };
    const second = await playScript(models, context);
    expect(second.message.content).toEqual([{ type: "toolCall", id: "call_2", name: "cat", arguments: { f: 1 } }]);
    const empty = await playScript(models);
    expect(empty.types).toEqual(["start", "done"]);
    expect(empty.message).toMatchObject({ stopReason: "toolUse", content: [] });
  });

  it("error: start then error{error}; retryable exactly when the step says so (pi-ai isRetryableAssistantError)", async () => {
    const { models } = scriptedRegistry([
      { error: "upstream hiccup", retryable: true },
      { error: "bad request" },
      { error: "bad request", retryable: false },
      { error: "connection timeout", retryable: false },
      { error: "socket hang up", retryable: true },
    ]);
    const played = [];
    for (let i = 0; i < 5; i++) played.push(await playScript(models));
    for (const one of played) {
      expect(one.types).toEqual(["start", "error"]);
      expect(one.events[1]).toMatchObject({ type: "error", reason: "error" });
      expect(one.message).toMatchObject({ stopReason: "error", content: [] });
      expect(isContextOverflow(one.message, 128_000)).toBe(false);
    }
    expect(played.map((one) => isRetryableAssistantError(one.message))).toEqual([true, false, false, false, true]);
    expect(played.map((one) => one.message.errorMessage)).toEqual([
      "scripted: upstream hiccup (503 service unavailable, retryable)",
      "scripted: bad request",
      "scripted: bad request",
      "scripted: connection timeout [not retryable: scripted quota exceeded]",
      "scripted: socket hang up",
    ]);
  });

  it("overflow: an error response pi-ai's isContextOverflow recognises (and that is not retryable)", async () => {
    const { models } = scriptedRegistry([{ overflow: true }]);
    const model = scriptedModel(models, "script");
    const played = await playScript(models);
    expect(played.types).toEqual(["start", "error"]);
    expect(played.message.stopReason).toBe("error");
    expect(isContextOverflow(played.message, model.contextWindow)).toBe(true);
    expect(isContextOverflow(played.message)).toBe(true);
    expect(isRetryableAssistantError(played.message)).toBe(false);
  });

  it("length: done{length} reporting the full output limit, so it is not a recoverable length", async () => {
    const { models } = scriptedRegistry([{ length: true }, { length: true, usage: { output: 100 } }]);
    const model = scriptedModel(models, "script");
    const played = await playScript(models);
    expect(played.types).toEqual(["start", "done"]);
    expect(played.events[1]).toMatchObject({ type: "done", reason: "length" });
    expect(played.message.stopReason).toBe("length");
    expect(played.message.usage.output).toBe(model.maxTokens);
    expect(isRecoverableLength(played.message, model.maxTokens)).toBe(false);
    expect(isContextOverflow(played.message, model.contextWindow)).toBe(false);
    // A step may report less output than the limit: then it is the recoverable kind (§3.5 overflow).
    const short = await playScript(models);
    expect(isRecoverableLength(short.message, model.maxTokens)).toBe(true);
  });

  it("usage: the step's numbers replace the defaults field by field; totals follow unless given", async () => {
    const { models } = scriptedRegistry([
      { text: "abcd", usage: { input: 10, cacheRead: 5, cacheWrite1h: 1, cost: { input: 0.25, output: 0.5 } } },
      { text: "abcd", usage: { totalTokens: 99, cost: { total: 7 } } },
    ]);
    expect((await playScript(models)).message.usage).toEqual({
      input: 10,
      output: 1,
      cacheRead: 5,
      cacheWrite: 0,
      cacheWrite1h: 1,
      totalTokens: 16,
      cost: { input: 0.25, output: 0.5, cacheRead: 0, cacheWrite: 0, total: 0.75 },
    });
    expect((await playScript(models)).message.usage).toMatchObject({ totalTokens: 99, cost: { ...zeroCost, total: 7 } });
  });

  it("an exhausted script answers a non-retryable error", async () => {
    const { models } = scriptedRegistry([{ text: "only" }]);
    await playScript(models);
    const played = await playScript(models);
    expect(played.types).toEqual(["start", "error"]);
    expect(played.message).toMatchObject({ stopReason: "error", errorMessage: EXHAUSTED_MESSAGE });
    expect(played.message.errorMessage).toBe("scripted: no step left in scripted/steps");
    expect(isRetryableAssistantError(played.message)).toBe(false);
  });

  it("a registry without a bound source answers a non-retryable error on scripted/script", async () => {
    const unbound = createModelRegistry({ scripted: true });
    const played = await playScript(unbound);
    expect(played.types).toEqual(["start", "error"]);
    expect(played.message).toMatchObject({ stopReason: "error", errorMessage: expect.stringContaining("no script is bound") });
    expect(isRetryableAssistantError(played.message)).toBe(false);
    // echo needs no script.
    expect((await drain(unbound.streamSimple(scriptedModel(unbound, "echo"), userContext("hi")))).message.content).toEqual([
      { type: "text", text: "hi" },
    ]);
  });

  it("delayMs waits before answering and then answers normally", async () => {
    const { models } = scriptedRegistry([{ text: "late", delayMs: 2 }]);
    const played = await playScript(models);
    expect(played.types).toEqual(["start", "text_start", "text_delta", "text_end", "done"]);
    expect(played.message.content).toEqual([{ type: "text", text: "late" }]);
  });
});
