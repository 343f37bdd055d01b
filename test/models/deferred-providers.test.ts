import type { Api, AssistantMessage, Context, Model } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { createModelRegistry } from "../../models/registry.ts";
import { tenantModels } from "../../models/tenant-models.ts";
import type { ModelsPort } from "../../harness/execution/models.ts";
import { ANTHROPIC_BATCH_ID, anthropicWire, OPENAI_RESPONSE_ID, openaiWire } from "./deferred-wires.ts";
import { noDeployment, TENANT_KEY } from "./provider-rig.ts";
import { wireFetch, type SeenRequest, type WireAnswer } from "./wire.ts";

// Deferred requests of real providers through the production Models port (tenant-models.ts over
// pi-ai's providers with our deferred extensions); only the provider's host is a fixture.

const registry = createModelRegistry({ scripted: false });
const GPT = requireModel("openai", "gpt-5");
const CLAUDE = requireModel("anthropic", "claude-sonnet-4-5");
const context: Context = { systemPrompt: "Be brief.", messages: [{ role: "user", content: "What is 2 + 2?", timestamp: 1 }] };

function requireModel(provider: string, modelId: string): Model<Api> {
  const model = registry.getModel(provider, modelId);
  if (!model) throw new Error(`fixture model ${provider}/${modelId} is not in the catalog`);
  return model;
}

function portOver(answers: WireAnswer[]): { models: ModelsPort; seen: SeenRequest[]; remaining: () => number } {
  const wire = wireFetch(answers);
  const models = tenantModels(registry, { deployment: noDeployment, grant: async () => ({ key: { apiKey: TENANT_KEY }, deploymentKeys: false }), fetch: wire.fetch });
  return { models, seen: wire.seen, remaining: wire.remaining };
}

async function submitted(models: ModelsPort, model: Model<Api>): Promise<AssistantMessage> {
  return models.streamSimple(model, context, { deferred: true }).result();
}

function handleOf(message: AssistantMessage) {
  if (!message.deferred) throw new Error(`expected a deferred handle, got ${message.stopReason}: ${message.errorMessage ?? ""}`);
  return message.deferred;
}

const textOf = (message: AssistantMessage): string => message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");

describe("OpenAI background responses", { timeout: 30_000 }, () => {
  it("submits the request pi-ai would stream as a background response and answers with its handle", async () => {
    const { models, seen } = portOver([openaiWire.created()]);
    const message = await submitted(models, GPT);
    expect(message.stopReason).toBe("deferred");
    expect(handleOf(message)).toMatchObject({ provider: "openai", modelId: GPT.id, api: "openai-responses", id: OPENAI_RESPONSE_ID });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.url).toBe("https://api.openai.com/v1/responses");
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${TENANT_KEY}`);
    expect(seen[0]?.body).toMatchObject({ model: GPT.id, background: true, stream: false, store: true });
    expect(JSON.stringify(seen[0]?.body)).toContain("What is 2 + 2?");
  });

  it("a poll of a queued or running response is still pending, with the same handle", async () => {
    const { models, seen } = portOver([openaiWire.created(), openaiWire.status("queued"), openaiWire.status("in_progress")]);
    const handle = handleOf(await submitted(models, GPT));
    for (const _ of [1, 2]) {
      const polled = await models.streamDeferred(GPT, handle, { wait: 0 }).result();
      expect(polled.stopReason).toBe("deferred");
      expect(polled.deferred?.id).toBe(OPENAI_RESPONSE_ID);
    }
    expect(seen.slice(1).map((request) => request.url)).toEqual([`https://api.openai.com/v1/responses/${OPENAI_RESPONSE_ID}`, `https://api.openai.com/v1/responses/${OPENAI_RESPONSE_ID}`]);
    expect(seen[1]?.headers.authorization).toBe(`Bearer ${TENANT_KEY}`);
  });

  it("a poll of a completed response answers its text, reasoning, usage and cost", async () => {
    const { models } = portOver([openaiWire.created(), openaiWire.completed("It is 4.")]);
    const handle = handleOf(await submitted(models, GPT));
    const done = await models.streamDeferred(GPT, handle, { wait: 0 }).result();
    expect(done.stopReason).toBe("stop");
    expect(textOf(done)).toBe("It is 4.");
    expect(done.content.some((block) => block.type === "thinking")).toBe(true);
    expect(done.usage).toMatchObject({ input: 40, output: 7 });
    expect(done.usage.cost.total).toBeGreaterThan(0);
  });

  it("a completed response that calls a tool answers the call", async () => {
    const { models } = portOver([openaiWire.created(), openaiWire.toolCall("lookup", { q: "2+2" })]);
    const done = await models.streamDeferred(GPT, handleOf(await submitted(models, GPT)), { wait: 0 }).result();
    expect(done.stopReason).toBe("toolUse");
    expect(done.content).toContainEqual(expect.objectContaining({ type: "toolCall", name: "lookup", arguments: { q: "2+2" } }));
  });

  it("a failed, cancelled or vanished response fails the poll with the provider's reason", async () => {
    const { models } = portOver([openaiWire.created(), openaiWire.failed(), openaiWire.cancelled(), openaiWire.notFound()]);
    const handle = handleOf(await submitted(models, GPT));
    const failed = await models.streamDeferred(GPT, handle, { wait: 0 }).result();
    const cancelled = await models.streamDeferred(GPT, handle, { wait: 0 }).result();
    const expired = await models.streamDeferred(GPT, handle, { wait: 0 }).result();
    expect([failed.stopReason, cancelled.stopReason, expired.stopReason]).toEqual(["error", "error", "error"]);
    expect(failed.errorMessage).toContain("The model failed to answer");
    expect(cancelled.errorMessage).toContain("cancelled");
    expect(expired.errorMessage).toContain("not found");
  });

  it("a rate limit or server error on a poll says nothing about the work: still pending", async () => {
    const { models } = portOver([openaiWire.created(), { status: 503, chunks: ["upstream unavailable"] }, { status: 429, chunks: ['{"error":{"message":"slow down"}}'] }]);
    const handle = handleOf(await submitted(models, GPT));
    for (const _ of [1, 2]) expect((await models.streamDeferred(GPT, handle, { wait: 0 }).result()).stopReason).toBe("deferred");
  });

  it("cancel asks the provider to drop the background response", async () => {
    const { models, seen } = portOver([openaiWire.created(), openaiWire.cancelAnswer()]);
    const handle = handleOf(await submitted(models, GPT));
    await models.cancelDeferred(GPT, handle, {});
    expect(seen[1]).toMatchObject({ url: `https://api.openai.com/v1/responses/${OPENAI_RESPONSE_ID}/cancel` });
    expect(seen[1]?.headers.authorization).toBe(`Bearer ${TENANT_KEY}`);
  });

  it("without the deferred option the request streams as before", async () => {
    const { models, seen } = portOver([]);
    await models.streamSimple(GPT, context, {}).result();
    expect(seen[0]?.body).toMatchObject({ stream: true });
    expect(seen[0]?.body).not.toHaveProperty("background");
  });
});

describe("Anthropic message batches", { timeout: 30_000 }, () => {
  it("submits the request pi-ai would stream as a one-request batch and answers with the batch's handle", async () => {
    const { models, seen } = portOver([anthropicWire.created()]);
    const message = await submitted(models, CLAUDE);
    const handle = handleOf(message);
    expect(handle).toMatchObject({ provider: "anthropic", modelId: CLAUDE.id, api: "anthropic-messages", id: ANTHROPIC_BATCH_ID });
    // Results stay available for 29 days after the batch was created.
    expect(handle.expiresAt).toBe(Date.parse("2026-12-01T10:00:00Z") + 29 * 24 * 60 * 60 * 1000);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.url.split("?")[0]).toBe("https://api.anthropic.com/v1/messages/batches");
    expect(seen[0]?.headers["x-api-key"]).toBe(TENANT_KEY);
    const body = seen[0]?.body;
    expect(body).toMatchObject({ requests: [{ custom_id: "request", params: { model: CLAUDE.id } }] });
    expect(JSON.stringify(body)).toContain("What is 2 + 2?");
    expect(JSON.stringify(body)).not.toContain('"stream"');
  });

  it("a poll of a batch in progress or canceling is still pending", async () => {
    const { models, seen } = portOver([anthropicWire.created(), anthropicWire.status("in_progress"), anthropicWire.status("canceling")]);
    const handle = handleOf(await submitted(models, CLAUDE));
    for (const _ of [1, 2]) expect((await models.streamDeferred(CLAUDE, handle, { wait: 0 }).result()).stopReason).toBe("deferred");
    expect(seen[1]?.url).toBe(`https://api.anthropic.com/v1/messages/batches/${ANTHROPIC_BATCH_ID}`);
    expect(seen[1]?.headers).toMatchObject({ "x-api-key": TENANT_KEY, "anthropic-version": "2023-06-01" });
  });

  it("a poll of an ended batch reads its results and answers the message with usage and cost", async () => {
    const { models, seen } = portOver([anthropicWire.created(), anthropicWire.status("ended"), anthropicWire.succeeded("Four.")]);
    const done = await models.streamDeferred(CLAUDE, handleOf(await submitted(models, CLAUDE)), { wait: 0 }).result();
    expect(done.stopReason).toBe("stop");
    expect(textOf(done)).toBe("Four.");
    expect(done.content[0]).toMatchObject({ type: "thinking", thinking: "weighing it", thinkingSignature: "c2lnbmF0dXJl" });
    expect(done.usage).toMatchObject({ input: 50, output: 9 });
    expect(done.usage.cost.total).toBeGreaterThan(0);
    expect(seen[2]?.url).toBe(`https://api.anthropic.com/v1/messages/batches/${ANTHROPIC_BATCH_ID}/results`);
  });

  it("an ended batch whose message calls a tool answers the call", async () => {
    const { models } = portOver([anthropicWire.created(), anthropicWire.status("ended"), anthropicWire.toolUse("lookup", { q: "2+2" })]);
    const done = await models.streamDeferred(CLAUDE, handleOf(await submitted(models, CLAUDE)), { wait: 0 }).result();
    expect(done.stopReason).toBe("toolUse");
    expect(done.content).toContainEqual(expect.objectContaining({ type: "toolCall", id: "toolu_1", name: "lookup", arguments: { q: "2+2" } }));
  });

  it("an errored, canceled or expired request fails the poll with the reason", async () => {
    const ended = anthropicWire.status("ended");
    const { models } = portOver([anthropicWire.created(), ended, anthropicWire.errored(), anthropicWire.status("ended"), anthropicWire.canceled(), anthropicWire.status("ended"), anthropicWire.expired()]);
    const handle = handleOf(await submitted(models, CLAUDE));
    const answers = [];
    for (const _ of [1, 2, 3]) answers.push(await models.streamDeferred(CLAUDE, handle, { wait: 0 }).result());
    expect(answers.map((answer) => answer.stopReason)).toEqual(["error", "error", "error"]);
    expect(answers[0]?.errorMessage).toContain("max_tokens is too large");
    expect(answers[1]?.errorMessage).toContain("canceled");
    expect(answers[2]?.errorMessage).toContain("expired");
  });

  it("a server error while reading the batch or its results leaves the run pending", async () => {
    const { models } = portOver([anthropicWire.created(), { status: 529, chunks: ['{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'] }, anthropicWire.status("ended"), { status: 500, chunks: ["oops"] }]);
    const handle = handleOf(await submitted(models, CLAUDE));
    for (const _ of [1, 2]) expect((await models.streamDeferred(CLAUDE, handle, { wait: 0 }).result()).stopReason).toBe("deferred");
  });

  it("cancel asks the provider to cancel the batch", async () => {
    const { models, seen } = portOver([anthropicWire.created(), anthropicWire.cancelAnswer()]);
    await models.cancelDeferred(CLAUDE, handleOf(await submitted(models, CLAUDE)), {});
    expect(seen[1]?.url).toBe(`https://api.anthropic.com/v1/messages/batches/${ANTHROPIC_BATCH_ID}/cancel`);
    expect(seen[1]?.headers["x-api-key"]).toBe(TENANT_KEY);
  });
});
