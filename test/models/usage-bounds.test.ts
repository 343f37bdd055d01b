import type { AssistantMessage } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { createModelRegistry } from "../../models/registry.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import { sanitizeUsage, validUsage } from "../../models/usage-bounds.ts";
import { MAX_USAGE_COST, MAX_USAGE_TOKENS } from "../../schema/usage.ts";
import { drain, scriptedModel, userContext } from "./helpers.ts";

// Usage from any provider enters the engine within bounds (models/usage-bounds.ts): the registry's
// streams carry bounded usage in their final message and their result, whatever the provider said.

/** A registry whose scripted/script model plays `step` without validating it (like a buggy provider). */
function registryPlaying(step: ScriptStep) {
  return createModelRegistry({ scripted: true, scriptSource: () => ({ takeStep: async () => step }) });
}

describe("usage bounds at the Models port", () => {
  it("bounds a provider's 1e308, NaN, negative and fractional numbers in the done message and result()", async () => {
    const models = registryPlaying({ text: "hi", usage: { input: 1e308, output: Number.NaN, cacheRead: -4, cacheWrite: 2.6, cost: { input: Infinity, total: -1 } } });
    const stream = models.streamSimple(scriptedModel(models, "script"), userContext("go"));
    const { events, message } = await drain(stream);
    const done = events.find((event) => event.type === "done");
    const result: AssistantMessage = await stream.result();
    for (const final of [message, result, done?.type === "done" ? done.message : undefined]) {
      expect(final?.usage).toMatchObject({ input: MAX_USAGE_TOKENS, output: 0, cacheRead: 0, cacheWrite: 3, cost: { input: MAX_USAGE_COST, total: 0 } });
      expect(final && validUsage(final.usage)).toBe(true);
    }
    expect(JSON.parse(JSON.stringify(result.usage))).toEqual(result.usage);
  });

  it("bounds the usage of an error response too", async () => {
    const models = registryPlaying({ error: "boom", usage: { input: Infinity, totalTokens: 1e300 } });
    const message = (await drain(models.streamSimple(scriptedModel(models, "script"), userContext("go")))).message;
    expect(message.stopReason).toBe("error");
    expect(message.usage).toMatchObject({ input: MAX_USAGE_TOKENS, totalTokens: MAX_USAGE_TOKENS });
  });

  it("leaves usage within bounds untouched, optional fields included", () => {
    const usage = { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, reasoning: 1, totalTokens: 10, cost: { input: 0.5, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.5 } };
    expect(validUsage(usage)).toBe(true);
    expect(sanitizeUsage(usage)).toEqual(usage);
    expect(sanitizeUsage({ ...usage, reasoning: -1 })).toEqual({ ...usage, reasoning: 0 });
  });
});
