import { describe, expect, it } from "vitest";
import { createModelRegistry, modelCatalog } from "../../models/registry.ts";
import { createScriptedProvider, scriptedModels } from "../../models/scripted/provider.ts";

// The Models port: pi-ai's registry with the scripted provider when enabled, and the catalog rows
// GET /v1/models serves.

describe("the model registry", () => {
  it("registers scripted/echo and scripted/script when scripted models are on", async () => {
    const models = createModelRegistry({ scripted: true });
    const free = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    expect(modelCatalog(models, new Set(["scripted"]))).toEqual([
      { provider: "scripted", modelId: "echo", name: "Scripted echo", contextWindow: 128_000, maxTokens: 8_192, input: ["text", "image"], reasoning: false, cost: free },
      { provider: "scripted", modelId: "script", name: expect.any(String), contextWindow: 128_000, maxTokens: 8_192, input: ["text", "image"], reasoning: true, cost: free },
    ]);
    expect(models.getModel("scripted", "echo")).toMatchObject({ api: "scripted", provider: "scripted", baseUrl: "scripted://local" });
    expect(models.getModel("scripted", "nope")).toBeUndefined();
    // Keyless auth that reports configured: both models are available without credentials.
    expect(await models.checkAuth("scripted")).toMatchObject({ type: "api_key" });
    expect((await models.getAvailable("scripted")).map((model) => model.id)).toEqual(["echo", "script"]);
  });

  it("has no scripted provider when scripted models are off", () => {
    const models = createModelRegistry({ scripted: false });
    expect(models.getProvider("scripted")).toBeUndefined();
    expect(models.getModel("scripted", "echo")).toBeUndefined();
    expect(modelCatalog(models, new Set(["scripted"]))).toEqual([]);
  });

  it("registers the hosted providers, each with pi-ai's catalog, whatever credentials exist", () => {
    const models = createModelRegistry({ scripted: false });
    for (const provider of ["openai", "anthropic", "google", "mistral", "groq", "xai", "deepseek", "openrouter", "cloudflare-workers-ai", "cloudflare-ai-gateway"]) {
      expect(models.getModels(provider).length, provider).toBeGreaterThan(0);
    }
    const openai = modelCatalog(models, new Set(["openai"]));
    expect(openai.every((row) => row.provider === "openai")).toBe(true);
    expect(openai.find((row) => row.modelId === "gpt-4o-mini")).toMatchObject({ name: expect.any(String), input: ["text", "image"], cost: { input: expect.any(Number) } });
  });

  it("builds the provider through createProvider with deferred support", () => {
    const provider = createScriptedProvider();
    expect(provider.id).toBe("scripted");
    expect(provider.getModels()).toEqual(scriptedModels);
    expect(typeof provider.fetchDeferred).toBe("function");
    expect(typeof provider.cancelDeferred).toBe("function");
  });
});
