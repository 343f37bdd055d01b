import { describe, expect, it } from "vitest";
import { HOOK_DURABILITY, HookRegistry, hookErrorEvent } from "../../harness/execution/hooks.ts";
import type { CompactionPreparationView, HookErrorInfo, HookModel, SettledAssistantMessage, StreamOptionsPatch } from "../../harness/execution/hooks.ts";
import { InvalidHookResult } from "../../harness/execution/errors.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import type { AgentMessage } from "../../schema/messages.ts";
import { assistantMessage, userMessage } from "../helpers/messages.ts";

// Hook pipelines (reference §5.1): registration order, one aggregation rule per hook, handler_error
// reporting, and the two fail-closed exceptions (before_drive, before_tool).

const scope = { lane: "main", runId: "op-1" };
const model: HookModel = { provider: "scripted", modelId: "echo", contextWindow: 1000, maxTokens: 100 };

function setup() {
  const errors: HookErrorInfo[] = [];
  const hooks = new HookRegistry((info) => errors.push(info));
  const controller = new AbortController();
  return { hooks, errors, controller, ctx: { signal: controller.signal } };
}

function settled(text: string, stopReason: SettledAssistantMessage["stopReason"] = "stop"): SettledAssistantMessage {
  return { ...assistantMessage(text), stopReason };
}

const toolEvent = { ...scope, toolCallId: "call-1", toolName: "echo", args: { text: "hi" } };
const afterToolEvent = { ...toolEvent, content: [{ type: "text" as const, text: "hi" }], isError: false };
const preparation: CompactionPreparationView = {
  messagesToSummarize: [],
  turnPrefixMessages: [],
  retainedTail: [],
  isSplitTurn: false,
  tokensBefore: 0,
  fileOps: { read: [], written: [], edited: [] },
  settings: { enabled: true, reserveTokens: 0, keepRecentTokens: 0 },
};

describe("hook registry", () => {
  it("exports the durability class of each of the 11 hooks", () => {
    const transition = "transition-consumed";
    const request = "request-local";
    expect(HOOK_DURABILITY).toEqual({
      before_drive: "pass-local",
      before_run: transition, before_run_end: transition,
      transform_context: request, before_request: request, before_payload: request,
      after_response: transition, before_tool: transition, after_tool: transition,
      before_compaction: transition, before_navigation: transition,
    });
  });

  it("runs handlers in registration order with the scoped event and the invocation's signal", async () => {
    const { hooks, ctx } = setup();
    const seen: string[] = [];
    hooks.on("before_drive", (event, context) => {
      seen.push(`a:${event.operation}:${event.lane}:${event.runId}:${context.signal === ctx.signal}`);
    });
    hooks.on("before_drive", async () => {
      await Promise.resolve();
      seen.push("b");
    });
    hooks.on("before_drive", () => {
      seen.push("c");
    });
    await hooks.runBeforeDrive({ ...scope, operation: "run" }, ctx);
    expect(seen).toEqual(["a:run:main:op-1:true", "b", "c"]);
  });

  it("unsubscribe removes only that handler; a running pipeline keeps the handlers it started with", async () => {
    const { hooks, ctx } = setup();
    const seen: string[] = [];
    let offB: () => void = () => undefined;
    const offA = hooks.on("before_drive", () => {
      seen.push("a");
      offB();
    });
    offB = hooks.on("before_drive", () => {
      seen.push("b");
    });
    await hooks.runBeforeDrive({ ...scope, operation: "run" }, ctx);
    expect(seen).toEqual(["a", "b"]);
    offA();
    offA();
    await hooks.runBeforeDrive({ ...scope, operation: "run" }, ctx);
    expect(seen).toEqual(["a", "b"]);
  });

  it("a throwing handler is reported (with its id) and skipped; the rest continue", async () => {
    const { hooks, errors, ctx } = setup();
    hooks.on("before_payload", () => ({ payload: { step: 1 } }));
    hooks.on("before_payload", () => {
      throw new Error("boom");
    }, { id: "bad" });
    hooks.on("before_payload", (event) => ({ payload: { previous: event.payload } }));
    const { payload } = await hooks.runBeforePayload({ ...scope, model, payload: { step: 0 } }, ctx);
    expect(payload).toEqual({ previous: { step: 1 } });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ hook: "before_payload", handlerId: "bad", lane: "main", runId: "op-1" });
    expect(hookErrorEvent(errors[0]!)).toEqual({
      type: "handler_error", kind: "hook", hook: "before_payload", error: "boom", lane: "main",
    });
  });

  it("a failing onHandlerError reporter never changes the pipeline's outcome", async () => {
    const hooks = new HookRegistry(() => {
      throw new Error("reporter down");
    });
    hooks.on("before_run_end", () => {
      throw new Error("boom");
    });
    hooks.on("before_run_end", () => ({ followUp: "next" }));
    const signal = new AbortController().signal;
    await expect(hooks.runBeforeRunEnd({ ...scope, messages: [] }, { signal })).resolves.toEqual({ followUp: "next" });
  });

  it("before_drive fails closed: a throw is reported and rethrown, later handlers do not run", async () => {
    const { hooks, errors, ctx } = setup();
    const failure = new Error("not allowed");
    let laterRan = false;
    hooks.on("before_drive", () => {
      throw failure;
    });
    hooks.on("before_drive", () => {
      laterRan = true;
    });
    await expect(hooks.runBeforeDrive({ ...scope, operation: "compaction" }, ctx)).rejects.toBe(failure);
    expect(laterRan).toBe(false);
    expect(errors.map((info) => info.hook)).toEqual(["before_drive"]);
  });

  it("before_run: injections append, each handler sees the prompt plus prior injections", async () => {
    const { hooks, ctx } = setup();
    const prompts: number[] = [];
    hooks.on("before_run", (event) => {
      prompts.push(event.prompt.length);
      return { messages: [userMessage("first")] };
    });
    hooks.on("before_run", () => undefined);
    hooks.on("before_run", (event) => {
      prompts.push(event.prompt.length);
      return { messages: [userMessage("second"), userMessage("third")] };
    });
    const prompt: AgentMessage[] = [userMessage("hello")];
    const { messages } = await hooks.runBeforeRun({ ...scope, prompt, resources: {} }, ctx);
    expect(prompts).toEqual([1, 2]);
    expect(messages.map((message) => message.role === "user" && message.content)).toEqual(["first", "second", "third"]);
    expect(prompt).toHaveLength(1);
  });

  it("before_run_end: the latest defined followUp wins", async () => {
    const { hooks, ctx } = setup();
    const event = { ...scope, messages: [] };
    expect(await hooks.runBeforeRunEnd(event, ctx)).toEqual({});
    hooks.on("before_run_end", () => ({ followUp: "one" }));
    hooks.on("before_run_end", () => ({ followUp: "two" }));
    hooks.on("before_run_end", () => ({}));
    expect(await hooks.runBeforeRunEnd(event, ctx)).toEqual({ followUp: "two" });
  });

  it("transform_context: chained field patches", async () => {
    const { hooks, ctx } = setup();
    const seen: string[] = [];
    hooks.on("transform_context", () => ({ systemPrompt: "patched" }));
    hooks.on("transform_context", (event) => {
      seen.push(event.systemPrompt);
      return { messages: [...event.messages, userMessage("extra")] };
    });
    hooks.on("transform_context", (event) => {
      seen.push(`${event.systemPrompt}:${event.messages.length}`);
    });
    const result = await hooks.runTransformContext({ ...scope, messages: [userMessage("a")], systemPrompt: "base" }, ctx);
    expect(seen).toEqual(["patched", "patched:2"]);
    expect(result.systemPrompt).toBe("patched");
    expect(result.messages).toHaveLength(2);
  });

  it("before_request: chained stream-option patches with signal and lifecycle callbacks stripped", async () => {
    const { hooks, ctx } = setup();
    let secondSaw: unknown;
    hooks.on("before_request", (event) => {
      expect(event).toMatchObject({ model, step: "assistant", attempt: 2 });
      // What untyped deployment code might hand back: a signal and callbacks next to plain options.
      const junk = { signal: new AbortController().signal, onPayload: () => undefined, custom: () => undefined };
      const plain: StreamOptionsPatch = { temperature: 0.5 };
      return { streamOptions: Object.assign(plain, junk) };
    });
    hooks.on("before_request", (event) => {
      secondSaw = event.streamOptions;
      return { streamOptions: { maxTokens: 50 } };
    });
    const streamOptions = { cacheRetention: "short", temperature: 1 };
    const result = await hooks.runBeforeRequest({ ...scope, model, step: "assistant", attempt: 2, streamOptions }, ctx);
    expect(secondSaw).toEqual({ cacheRetention: "short", temperature: 0.5 });
    expect(result.streamOptions).toEqual({ cacheRetention: "short", temperature: 0.5, maxTokens: 50 });
  });

  it("before_payload: the payload chains", async () => {
    const { hooks, ctx } = setup();
    hooks.on("before_payload", (event) => ({ payload: [event.payload, "a"] }));
    hooks.on("before_payload", () => ({}));
    hooks.on("before_payload", (event) => ({ payload: [event.payload, "b"] }));
    const { payload } = await hooks.runBeforePayload({ ...scope, model, payload: "p" }, ctx);
    expect(payload).toEqual([["p", "a"], "b"]);
  });

  it("after_response: the message chains and must stay a settled assistant", async () => {
    const { hooks, errors, ctx } = setup();
    hooks.on("after_response", (event) => ({ message: { ...event.message, content: [{ type: "text", text: "edited" }] } }));
    // Invalid results as untyped code could produce them (Object.assign keeps the declared type).
    hooks.on("after_response", (event) => ({ message: Object.assign({ ...event.message }, { role: "user" }) }));
    hooks.on("after_response", (event) => ({ message: Object.assign({ ...event.message }, { stopReason: "pending" }) }));
    hooks.on("after_response", (event) => {
      expect(event.message.content).toEqual([{ type: "text", text: "edited" }]);
      return { message: { ...event.message, usage: { ...zeroUsage(), input: 3 } } };
    });
    const { message } = await hooks.runAfterResponse({ ...scope, status: 200, message: settled("original") }, ctx);
    expect(message.content).toEqual([{ type: "text", text: "edited" }]);
    expect(message.usage.input).toBe(3);
    expect(errors).toHaveLength(2);
    expect(errors.every((info) => info.error instanceof InvalidHookResult)).toBe(true);
  });

  it("after_response: returning aborted is a handler error unless the signal is already aborted", async () => {
    const { hooks, errors, controller, ctx } = setup();
    hooks.on("after_response", (event) => ({ message: { ...event.message, stopReason: "aborted" } }));
    const refused = await hooks.runAfterResponse({ ...scope, message: settled("x") }, ctx);
    expect(refused.message.stopReason).toBe("stop");
    expect(errors).toHaveLength(1);
    controller.abort();
    const accepted = await hooks.runAfterResponse({ ...scope, message: settled("x") }, ctx);
    expect(accepted.message.stopReason).toBe("aborted");
    expect(errors).toHaveLength(1);
  });

  it("before_tool: args chain and the first block is terminal", async () => {
    const { hooks, ctx } = setup();
    let afterBlockRan = false;
    hooks.on("before_tool", (event) => ({ args: { ...event.args, a: 1 } }));
    hooks.on("before_tool", (event) => ({ args: { ...event.args, b: 2 } }));
    expect(await hooks.runBeforeTool(toolEvent, ctx)).toEqual({ args: { text: "hi", a: 1, b: 2 } });
    hooks.on("before_tool", () => ({ block: { reason: "denied", terminate: true } }));
    hooks.on("before_tool", () => {
      afterBlockRan = true;
      return { block: { reason: "second" } };
    });
    const result = await hooks.runBeforeTool(toolEvent, ctx);
    expect(result).toEqual({ args: { text: "hi", a: 1, b: 2 }, block: { reason: "denied", terminate: true } });
    expect(afterBlockRan).toBe(false);
  });

  it("before_tool fails closed: a throw becomes a block whose reason is the error message", async () => {
    const { hooks, errors, ctx } = setup();
    let laterRan = false;
    hooks.on("before_tool", () => {
      throw new Error("policy service unavailable");
    });
    hooks.on("before_tool", () => {
      laterRan = true;
    });
    const result = await hooks.runBeforeTool(toolEvent, ctx);
    expect(result).toEqual({ args: { text: "hi" }, block: { reason: "policy service unavailable" } });
    expect(laterRan).toBe(false);
    expect(errors.map((info) => info.hook)).toEqual(["before_tool"]);
  });

  it("after_tool: field-by-field patches, each handler seeing the fields patched so far", async () => {
    const { hooks, ctx } = setup();
    hooks.on("after_tool", () => ({ isError: true, details: { reason: "x" } }));
    hooks.on("after_tool", (event) => {
      expect(event).toMatchObject({ isError: true, details: { reason: "x" }, toolName: "echo" });
      return { content: [{ type: "text", text: "replaced" }], details: undefined, terminate: true };
    });
    hooks.on("after_tool", () => ({ usage: zeroUsage() }));
    const result = await hooks.runAfterTool(afterToolEvent, ctx);
    expect(result).toEqual({
      content: [{ type: "text", text: "replaced" }],
      isError: true,
      details: { reason: "x" },
      usage: zeroUsage(),
      terminate: true,
    });
  });

  it("before_compaction: stops at the first decline; neither means generate", async () => {
    const { hooks, ctx } = setup();
    const event = { ...scope, reason: "manual" as const, preparation };
    expect(await hooks.runBeforeCompaction(event, ctx)).toEqual({ decision: "generate" });
    let laterRan = false;
    hooks.on("before_compaction", () => ({ decline: false }));
    hooks.on("before_compaction", () => ({ decline: true }));
    hooks.on("before_compaction", () => {
      laterRan = true;
    });
    expect(await hooks.runBeforeCompaction(event, ctx)).toEqual({ decision: "decline" });
    expect(laterRan).toBe(false);
  });

  it("before_compaction: the first result wins; decline plus a result is a handler error and ignored", async () => {
    const { hooks, errors, ctx } = setup();
    const compaction = { summary: "s", tokensBefore: 10, retainedTail: [userMessage("tail")] };
    hooks.on("before_compaction", () => ({ decline: true, compaction: { ...compaction, summary: "both" } }));
    hooks.on("before_compaction", () => ({ compaction }));
    hooks.on("before_compaction", () => ({ decline: true }));
    const result = await hooks.runBeforeCompaction({ ...scope, reason: "threshold", preparation }, ctx);
    expect(result).toEqual({ decision: "result", result: compaction });
    expect(errors).toHaveLength(1);
    expect(errors[0]?.error).toBeInstanceOf(InvalidHookResult);
  });

  it("before_navigation: same rule with a branch summary result", async () => {
    const { hooks, errors, ctx } = setup();
    const event = { ...scope, targetId: "entry-1", preparation: { messages: [], fileOps: { read: [], written: [], edited: [] }, tokensBefore: 0, truncated: false, fromTipId: "tip", ancestorId: null }, customInstructions: "short" };
    const summary = { summary: "abandoned work", readFiles: ["a.ts"], modifiedFiles: [] };
    let instructions: string | undefined;
    hooks.on("before_navigation", (seen) => {
      instructions = seen.customInstructions;
      throw new Error("flaky");
    });
    hooks.on("before_navigation", () => ({ summary }));
    expect(await hooks.runBeforeNavigation(event, ctx)).toEqual({ decision: "result", result: summary });
    expect(instructions).toBe("short");
    expect(errors.map((info) => [info.hook, info.error instanceof Error && info.error.message])).toEqual([
      ["before_navigation", "flaky"],
    ]);
  });
});
