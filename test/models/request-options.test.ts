import { describe, expect, it } from "vitest";
import { createModelRegistry } from "../../models/registry.ts";
import type { ModelIdentity, ThinkingLevel } from "../../schema/lane.ts";
import type { StreamOptions } from "../../schema/settings.ts";
import { unwrap } from "../runtime/drive-helpers.ts";
import { completionText } from "./chat-completions-wire.ts";
import { anthropicStream } from "./family-wires.ts";
import { withProviderRig } from "./provider-rig.ts";
import { wireFetch, type WireAnswer } from "./wire.ts";

// The session's stream options `maxTokens` and `temperature` reach the provider's request body
// through the real engine and pi-ai's real providers (only the provider's host is a fixture):
// bounded by the model's own output maximum, and temperature only where the model takes one.

const GROQ = { provider: "groq", modelId: "llama-3.3-70b-versatile" } as const;
const CLAUDE = { provider: "anthropic", modelId: "claude-sonnet-4-5" } as const;
const registry = createModelRegistry({ scripted: false });

async function requestBody(model: ModelIdentity, answer: WireAnswer, streamOptions: StreamOptions, thinkingLevel: ThinkingLevel = "off"): Promise<Record<string, unknown>> {
  const wire = wireFetch([answer]);
  await withProviderRig(
    async (rig) => {
      await rig.harness.updateSettings({ streamOptions });
      const lane = await rig.harness.lane("main");
      if (thinkingLevel !== "off") unwrap(await lane.setThinkingLevel(thinkingLevel));
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }));
      unwrap(await lane.drive({ operationId }));
      expect(lane.getResult(operationId)?.status).toBe("completed");
    },
    { model, fetch: wire.fetch },
  );
  expect(wire.seen).toHaveLength(1);
  const body = wire.seen[0]?.body;
  if (typeof body !== "object" || body === null) throw new Error("the provider request had no JSON body");
  return { ...body };
}

const chatAnswer = (): WireAnswer => ({ chunks: completionText(["ok"]) });
const claudeAnswer = (): WireAnswer => ({ chunks: anthropicStream("hm", ["ok"], { input: 10, output: 2 }) });
const maxTokensOf = (body: Record<string, unknown>): unknown => body.max_tokens ?? body.max_completion_tokens;

describe("stream options in the provider request", { timeout: 30_000 }, () => {
  it("maxTokens and temperature reach an OpenAI-compatible request body", async () => {
    const body = await requestBody(GROQ, chatAnswer(), { maxTokens: 500, temperature: 0.3 });
    expect(maxTokensOf(body)).toBe(500);
    expect(body.temperature).toBe(0.3);
  });

  it("without them the request carries no temperature and the model's own output maximum", async () => {
    const body = await requestBody(GROQ, chatAnswer(), {});
    expect(body.temperature).toBeUndefined();
    expect(maxTokensOf(body)).toBe(registry.getModel(GROQ.provider, GROQ.modelId)?.maxTokens);
  });

  it("maxTokens above the model's output maximum is capped at that maximum", async () => {
    const modelMax = registry.getModel(GROQ.provider, GROQ.modelId)?.maxTokens;
    expect(modelMax).toBeLessThan(1_000_000);
    const body = await requestBody(GROQ, chatAnswer(), { maxTokens: 1_000_000 });
    expect(maxTokensOf(body)).toBe(modelMax);
  });

  it("Anthropic: max_tokens as asked, and a temperature above its range of 0–1 is sent as 1", async () => {
    const body = await requestBody(CLAUDE, claudeAnswer(), { maxTokens: 800, temperature: 1.7 });
    expect(body.max_tokens).toBe(800);
    expect(body.temperature).toBe(1);
  });

  it("a model thinking on the lane gets no temperature (reasoning providers refuse one)", async () => {
    const body = await requestBody(CLAUDE, claudeAnswer(), { temperature: 0.5 }, "low");
    expect(body.temperature).toBeUndefined();
    expect(body.thinking).toBeDefined();
  });
});
