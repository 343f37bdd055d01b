import type { Api, AssistantMessage, Context, Model } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { createModelRegistry } from "../../models/registry.ts";
import { tenantModels } from "../../models/tenant-models.ts";
import { anthropicStream } from "./family-wires.ts";
import { anthropicWire } from "./deferred-wires.ts";
import { noDeployment, TENANT_KEY } from "./provider-rig.ts";
import { wireFetch, type WireAnswer } from "./wire.ts";

// Deferred answers' cost and addresses. docs/providers.md: an Anthropic deferred run "becomes the
// one request of a message batch (half the price …)", and usage is recorded "tokens and cost in
// dollars, from each provider's prices": the batch answer, replayed through pi-ai's streaming
// parser, is priced at the batch's rate, not the streaming one. Polls reach the same API as the
// submission, whatever the tenant's base URL ends with.

const registry = createModelRegistry({ scripted: false });
const CLAUDE = requireModel("anthropic", "claude-sonnet-4-5");
const context: Context = { messages: [{ role: "user", content: "What is 2 + 2?", timestamp: 1 }] };
const USAGE = { input: 1_000_000, output: 100_000 };

function requireModel(provider: string, modelId: string): Model<Api> {
  const model = registry.getModel(provider, modelId);
  if (!model) throw new Error(`fixture model ${provider}/${modelId} is not in the catalog`);
  return model;
}

function port(answers: WireAnswer[]) {
  const wire = wireFetch(answers);
  return tenantModels(registry, { deployment: noDeployment, grant: async () => ({ key: { apiKey: TENANT_KEY }, deploymentKeys: false }), fetch: wire.fetch });
}

describe("an Anthropic message batch's answer", { timeout: 30_000 }, () => {
  it("costs half of what the same usage costs streamed", async () => {
    const streamed = await port([{ chunks: anthropicStream("t", ["Four."], USAGE) }]).streamSimple(CLAUDE, context).result();
    expect(streamed.stopReason).toBe("stop");
    const models = port([anthropicWire.created(), anthropicWire.status("ended"), anthropicWire.succeeded("Four.", USAGE)]);
    const submitted: AssistantMessage = await models.streamSimple(CLAUDE, context, { deferred: true }).result();
    if (!submitted.deferred) throw new Error(`expected a handle, got ${submitted.stopReason}`);
    const batched = await models.streamDeferred(CLAUDE, submitted.deferred, { wait: 0 }).result();
    expect(batched.stopReason).toBe("stop");
    expect(batched.usage).toMatchObject(USAGE);
    expect(batched.usage.cost.total).toBeCloseTo(streamed.usage.cost.total / 2, 6);
  });
});

describe("a tenant base URL written with a trailing slash", { timeout: 30_000 }, () => {
  // docs/providers.md: `baseUrl` "sends the provider's requests to another host"; the submit goes
  // where pi-ai's SDK sends it (the SDK joins the paths), and every poll of the same work must
  // reach the same API there, not a `//` path the proxy does not serve.
  const GPT = requireModel("openai", "gpt-5");
  it("OpenAI: the poll of a background response goes to the same API path as its submission", async () => {
    const wire = wireFetch([
      { chunks: [JSON.stringify({ id: "resp_bg", object: "response", status: "queued", output: [] })] },
      { chunks: [JSON.stringify({ id: "resp_bg", object: "response", status: "in_progress", output: [] })] },
    ]);
    const models = tenantModels(registry, {
      deployment: noDeployment,
      grant: async () => ({ key: { apiKey: TENANT_KEY, baseUrl: "https://proxy.example.com/v1/" }, deploymentKeys: false }),
      fetch: wire.fetch,
    });
    const submitted = await models.streamSimple(GPT, context, { deferred: true }).result();
    if (!submitted.deferred) throw new Error(`expected a handle, got ${submitted.stopReason}: ${submitted.errorMessage ?? ""}`);
    expect(wire.seen[0]?.url).toBe("https://proxy.example.com/v1/responses");
    await models.streamDeferred(GPT, submitted.deferred, { wait: 0 }).result();
    expect(wire.seen[1]?.url).toBe("https://proxy.example.com/v1/responses/resp_bg");
  });

  it("Anthropic: the poll of a batch goes to the same API path as its submission", async () => {
    const wire = wireFetch([anthropicWire.created(), anthropicWire.status("in_progress")]);
    const models = tenantModels(registry, {
      deployment: noDeployment,
      grant: async () => ({ key: { apiKey: TENANT_KEY, baseUrl: "https://proxy.example.com/" }, deploymentKeys: false }),
      fetch: wire.fetch,
    });
    const submitted = await models.streamSimple(CLAUDE, context, { deferred: true }).result();
    if (!submitted.deferred) throw new Error(`expected a handle, got ${submitted.stopReason}: ${submitted.errorMessage ?? ""}`);
    expect(wire.seen[0]?.url.split("?")[0]).toBe("https://proxy.example.com/v1/messages/batches");
    await models.streamDeferred(CLAUDE, submitted.deferred, { wait: 0 }).result();
    expect(wire.seen[1]?.url).toBe("https://proxy.example.com/v1/messages/batches/msgbatch_01fixture");
  });
});
