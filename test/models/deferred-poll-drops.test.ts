import type { Api, Context, FetchFunction, Model } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { createModelRegistry } from "../../models/registry.ts";
import { tenantModels } from "../../models/tenant-models.ts";
import type { ModelsPort } from "../../harness/execution/models.ts";
import { anthropicWire, openaiWire } from "./deferred-wires.ts";
import { noDeployment, TENANT_KEY } from "./provider-rig.ts";
import { wireFetch, type WireAnswer } from "./wire.ts";

// docs/providers.md "Deferred answers": "A poll that meets a rate limit, a server error or a
// dropped connection leaves the run suspended (it says nothing about the work); the next poll asks
// again." A poll answer is a terminal `deferred_error` for the run whenever its stopReason is
// "error" (harness/runtime/drive/deferred/settle-poll.ts), so a dropped connection must come back
// as "deferred" (still pending), never "error".

const registry = createModelRegistry({ scripted: false });
const GPT = requireModel("openai", "gpt-5");
const CLAUDE = requireModel("anthropic", "claude-sonnet-4-5");
const context: Context = { messages: [{ role: "user", content: "What is 2 + 2?", timestamp: 1 }] };

function requireModel(provider: string, modelId: string): Model<Api> {
  const model = registry.getModel(provider, modelId);
  if (!model) throw new Error(`fixture model ${provider}/${modelId} is not in the catalog`);
  return model;
}

type Step = WireAnswer | "drop";

/** Answers each request with the next step; "drop" fails the request as a refused or reset connection does. */
function portOver(steps: Step[]): ModelsPort {
  const answers = steps.filter((step): step is WireAnswer => step !== "drop");
  const wire = wireFetch(answers);
  const queue = [...steps];
  const fetch: FetchFunction = async (input, init) => {
    const step = queue.shift();
    if (step === "drop") throw new TypeError("Network connection lost.");
    return wire.fetch(input, init);
  };
  return tenantModels(registry, { deployment: noDeployment, grant: async () => ({ key: { apiKey: TENANT_KEY }, deploymentKeys: false }), fetch });
}

/** The answer cut after its first half: the connection drops while the body is read. */
function cut(answer: WireAnswer): WireAnswer {
  const text = answer.chunks.join("");
  const half = Math.floor(text.length / 2);
  return { ...answer, chunks: [text.slice(0, half), text.slice(half)], cutAfter: 1 };
}

async function handleOf(models: ModelsPort, model: Model<Api>) {
  const message = await models.streamSimple(model, context, { deferred: true }).result();
  if (!message.deferred) throw new Error(`expected a deferred handle, got ${message.stopReason}: ${message.errorMessage ?? ""}`);
  return message.deferred;
}

describe("a dropped connection on a deferred poll leaves the run pending", { timeout: 30_000 }, () => {
  it("Anthropic: the connection to the batch's results drops (the request fails): still pending", async () => {
    const models = portOver([anthropicWire.created(), anthropicWire.status("ended"), "drop"]);
    const polled = await models.streamDeferred(CLAUDE, await handleOf(models, CLAUDE), { wait: 0 }).result();
    expect(polled.errorMessage).toBeUndefined();
    expect(polled.stopReason).toBe("deferred");
  });

  it("Anthropic: the connection drops while the batch's results are read: still pending", async () => {
    const models = portOver([anthropicWire.created(), anthropicWire.status("ended"), cut(anthropicWire.succeeded("Four."))]);
    const polled = await models.streamDeferred(CLAUDE, await handleOf(models, CLAUDE), { wait: 0 }).result();
    expect(polled.errorMessage).toBeUndefined();
    expect(polled.stopReason).toBe("deferred");
  });

  it("OpenAI: the connection drops while the background response's status is read: still pending", async () => {
    const models = portOver([openaiWire.created(), cut(openaiWire.status("in_progress"))]);
    const polled = await models.streamDeferred(GPT, await handleOf(models, GPT), { wait: 0 }).result();
    expect(polled.errorMessage).toBeUndefined();
    expect(polled.stopReason).toBe("deferred");
  });

  it("a connection that fails before any answer on the status read is pending", async () => {
    const models = portOver([openaiWire.created(), "drop"]);
    const polled = await models.streamDeferred(GPT, await handleOf(models, GPT), { wait: 0 }).result();
    expect(polled.stopReason).toBe("deferred");
  });
});
