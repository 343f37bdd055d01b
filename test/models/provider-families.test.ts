import type { Api, Model } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { providerFailureOf } from "../../harness/execution/provider-failure.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { tenantModels, type TenantProviderGrant } from "../../models/tenant-models.ts";
import type { ModelsDeployment } from "../../models/deployment.ts";
import { completionText } from "./chat-completions-wire.ts";
import { anthropicStream, geminiStream, responsesStream } from "./family-wires.ts";
import { drain, userContext } from "./helpers.ts";
import { noDeployment, TENANT_KEY } from "./provider-rig.ts";
import { errorAnswer, wireFetch, type WireAnswer } from "./wire.ts";

// One fixture per provider family, through the tenant Models port and pi-ai's real API
// implementations: the request goes where it should with the tenant's key, text and thinking
// stream as deltas, usage and cost come back, and a 401 is classified as an auth failure.

const registry = createModelRegistry({ scripted: false });
const tenantKey: TenantProviderGrant = { key: { apiKey: TENANT_KEY }, deploymentKeys: false };

function model(provider: string, modelId: string): Model<Api> {
  const found = registry.getModel(provider, modelId);
  if (!found) throw new Error(`${provider}/${modelId} is not in pi-ai's catalog`);
  return found;
}

async function play(target: Model<Api>, answers: WireAnswer[], options: { grant?: TenantProviderGrant; deployment?: ModelsDeployment; injectFetch?: boolean } = {}) {
  const wire = wireFetch(answers);
  const deployment = options.deployment ?? noDeployment;
  const models = tenantModels(registry, {
    deployment,
    grant: async () => options.grant ?? tenantKey,
    ...(options.injectFetch !== false && { fetch: wire.fetch }),
  });
  const played = await drain(models.streamSimple(target, userContext("hello"), { reasoning: "low" }));
  return { ...played, seen: wire.seen };
}

const FAMILIES = [
  { family: "OpenAI Responses", model: () => model("openai", "gpt-5-mini"), stream: responsesStream, url: "https://api.openai.com/v1/responses", auth: (h: Record<string, string>) => h.authorization === `Bearer ${TENANT_KEY}` },
  { family: "Anthropic Messages", model: () => model("anthropic", "claude-sonnet-4-5"), stream: anthropicStream, url: "https://api.anthropic.com/v1/messages", auth: (h: Record<string, string>) => h["x-api-key"] === TENANT_KEY },
  {
    family: "Google Gemini",
    model: () => model("google", "gemini-2.5-flash"),
    stream: geminiStream,
    url: "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    auth: (h: Record<string, string>) => h["x-goog-api-key"] === TENANT_KEY,
  },
] as const;

describe.each(FAMILIES)("$family", { timeout: 30_000 }, ({ model: target, stream, url, auth }) => {
  it("streams thinking and text with the tenant's key, and reports usage and cost", async () => {
    const played = await play(target(), [{ chunks: stream("let me think", ["Hello", "there"], { input: 100_000, output: 20_000 }) }]);
    expect(played.message.errorMessage).toBeUndefined();
    expect(played.message.stopReason).toBe("stop");
    expect(played.types).toContain("thinking_delta");
    expect(played.types.filter((type) => type === "text_delta").length).toBeGreaterThanOrEqual(2);
    expect(played.message.content.map((block) => block.type)).toEqual(["thinking", "text"]);
    expect(played.message.content[1]).toMatchObject({ type: "text", text: "Hello there" });
    expect(played.message.usage).toMatchObject({ input: 100_000, output: 20_000 });
    expect(played.message.usage.cost.total).toBeGreaterThan(0);
    expect(played.seen[0]?.url.split("?beta")[0]).toBe(url);
    expect(auth(played.seen[0]?.headers ?? {})).toBe(true);
  });

  it("classifies a 401 as an auth failure naming the provider", async () => {
    const played = await play(target(), [errorAnswer(401, "invalid x-api-key")]);
    expect(played.message.stopReason).toBe("error");
    expect(providerFailureOf(played.message)).toMatchObject({ kind: "auth", status: 401 });
    expect(played.message.errorMessage).toContain(target().provider);
  });
});

describe("Google's answer to a key it does not accept", { timeout: 30_000 }, () => {
  it("is an auth failure, though Google answers 400 (API_KEY_INVALID), and names no key", async () => {
    const body = {
      error: {
        code: 400,
        message: "API key not valid. Please pass a valid API key.",
        status: "INVALID_ARGUMENT",
        details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }],
      },
    };
    const played = await play(model("google", "gemini-2.5-flash"), [{ status: 400, headers: {}, chunks: [JSON.stringify(body)] }]);
    expect(played.message.stopReason).toBe("error");
    expect(providerFailureOf(played.message)).toMatchObject({ kind: "auth", provider: "google", status: 400 });
    expect(played.message.errorMessage).toContain("google");
  });

  it("a 400 saying the key is incorrect (as some hosts answer) is an auth failure whose text echoes nothing of the key", async () => {
    const played = await play(model("google", "gemini-2.5-flash"), [errorAnswer(400, `Incorrect API key provided: xai-****${TENANT_KEY.slice(-4)}`)]);
    expect(providerFailureOf(played.message)).toMatchObject({ kind: "auth", status: 400 });
    expect(played.message.errorMessage).not.toContain(TENANT_KEY.slice(-4));
  });

  it("another 400 stays a request failure", async () => {
    const played = await play(model("google", "gemini-2.5-flash"), [errorAnswer(400, "Invalid JSON payload received.")]);
    expect(providerFailureOf(played.message)).toMatchObject({ kind: "http", status: 400 });
  });
});

describe("Workers AI through the AI binding", { timeout: 30_000 }, () => {
  it("sends the OpenAI-compatible request through the binding's fetch to the gateway route, with no provider key", async () => {
    const wire = wireFetch([{ chunks: completionText(["from", "the", "edge"]) }]);
    const binding = { aiGatewayLogId: null, fetch: wire.fetch };
    const deployment: ModelsDeployment = { ...noDeployment, aiBinding: binding };
    const models = tenantModels(registry, { deployment, grant: async () => ({ deploymentKeys: true }) });
    const target = model("cloudflare-workers-ai", "@cf/meta/llama-3.3-70b-instruct-fp8-fast");
    const played = await drain(models.streamSimple(target, userContext("hello")));
    expect(played.message.errorMessage).toBeUndefined();
    expect(played.message.content).toEqual([{ type: "text", text: "from the edge" }]);
    expect(wire.seen[0]?.url).toBe("https://workers-binding.ai/ai-gateway/gateways/default/workers-ai/v1/chat/completions");
    expect(wire.seen[0]?.headers.authorization).toBeUndefined();
    expect(wire.seen[0]?.headers["cf-aig-authorization"]).toMatch(/^Bearer /);
    expect(wire.seen[0]?.body).toMatchObject({ model: "@cf/meta/llama-3.3-70b-instruct-fp8-fast", stream: true });
  });

  it("is not used for a tenant that may not use the deployment's providers", async () => {
    const wire = wireFetch([{ chunks: completionText(["never"]) }]);
    const deployment: ModelsDeployment = { ...noDeployment, aiBinding: { aiGatewayLogId: null, fetch: wire.fetch } };
    const models = tenantModels(registry, { deployment, grant: async () => ({ deploymentKeys: false }) });
    const played = await drain(models.streamSimple(model("cloudflare-workers-ai", "@cf/meta/llama-3.3-70b-instruct-fp8-fast"), userContext("hello")));
    expect(played.message.stopReason).toBe("error");
    expect(providerFailureOf(played.message)).toEqual({ kind: "auth", provider: "cloudflare-workers-ai" });
    expect(wire.seen).toEqual([]);
  });
});
