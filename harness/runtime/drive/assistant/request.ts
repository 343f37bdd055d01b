import type { Context, SimpleStreamOptions, Tool, Transport } from "@earendil-works/pi-ai";
import type { AgentMessage } from "../../../../schema/messages.ts";
import type { JsonValue } from "../../../../schema/json.ts";
import type { StreamOptions } from "../../../../schema/settings.ts";
import type { ThinkingLevel } from "../../../../schema/lane.ts";
import { projectEntries, toProviderMessages } from "../../../execution/context.ts";
import type { ProviderModel } from "../../../execution/models.ts";
import { requestMaxTokens, requestTemperature } from "../../../execution/sampling.ts";
import type { GenerationContext } from "../../types.ts";
import type { Pass } from "../pass.ts";

/** The harness messages a request on this lane would see now: its bounded context path, projected (§6.4). */
export function contextMessages(pass: Pass): AgentMessage[] {
  return projectEntries(pass.lane.contextPath(), pass.core.projectors);
}

/**
 * Prepares one assistant request (reference §7.1 steps 1–4): the bounded context, the gated
 * `transform_context` and `before_request` pipelines, provider messages and stream options. Pure
 * preparation: nothing here is an effect on the outside world.
 */
export async function prepareAssistantRequest(
  pass: Pass,
  model: ProviderModel,
  generation: GenerationContext,
  attempt: number,
): Promise<{ context: Context; options: SimpleStreamOptions }> {
  const { core } = pass;
  const scope = { lane: pass.lane.name, runId: pass.operationId };
  const messages = contextMessages(pass);
  const transformed = await pass.gate.admit((signal) =>
    core.hooks.runTransformContext({ ...scope, messages, systemPrompt: core.settings().systemPrompt ?? "" }, { signal }),
  );
  const identity = { provider: model.provider, modelId: model.id, contextWindow: model.contextWindow, maxTokens: model.maxTokens };
  const requested = await pass.gate.admit((signal) =>
    core.hooks.runBeforeRequest(
      { ...scope, model: identity, step: "assistant", attempt, streamOptions: streamOptionsPatch(generation.streamOptions) },
      { signal },
    ),
  );
  const tools = activeToolDeclarations(pass, generation);
  const context: Context = {
    ...(transformed.systemPrompt.length > 0 && { systemPrompt: transformed.systemPrompt }),
    messages: toProviderMessages(transformed.messages),
    ...(tools.length > 0 && { tools }),
  };
  const options: SimpleStreamOptions = {
    ...toSimpleOptions(requested.streamOptions),
    ...samplingOptions(requested.streamOptions, model, generation.configuration.thinkingLevel),
    sessionId: `${core.sessionId}:${pass.lane.name}`,
    ...reasoningOf(generation.configuration.thinkingLevel),
    ...deferredOf(requested.streamOptions),
  };
  return { context, options };
}

/** The captured active tools as the model is told about them (each resolved before the intent). */
function activeToolDeclarations(pass: Pass, generation: GenerationContext): Tool[] {
  return generation.configuration.activeToolNames.flatMap((name) => {
    const declaration = pass.core.tools.resolve(name)?.declaration;
    return declaration ? [{ name, description: declaration.description, parameters: declaration.parameters }] : [];
  });
}

function streamOptionsPatch(options: StreamOptions): Record<string, JsonValue | undefined> {
  return { ...options };
}

const TRANSPORTS: readonly Transport[] = ["sse", "websocket", "websocket-cached", "auto"];

/** Only the curated keys reach the provider; anything a hook added outside them is dropped (summary requests too). */
export function toSimpleOptions(patch: Record<string, JsonValue | undefined>): SimpleStreamOptions {
  const options: SimpleStreamOptions = {};
  const transport = TRANSPORTS.find((candidate) => candidate === patch.transport);
  if (transport) options.transport = transport;
  for (const key of ["timeoutMs", "maxRetries", "maxRetryDelayMs"] as const) {
    const value = patch[key];
    if (typeof value === "number") options[key] = value;
  }
  const cache = patch.cacheRetention;
  if (cache === "none" || cache === "short" || cache === "long") options.cacheRetention = cache;
  const headers = stringRecord(patch.headers);
  if (headers) options.headers = headers;
  const metadata = stringRecord(patch.metadata);
  if (metadata) options.metadata = metadata;
  return options;
}

/** `maxTokens` and `temperature`, fitted to the model (sampling.ts); absent unless asked for. */
function samplingOptions(patch: Record<string, JsonValue | undefined>, model: ProviderModel, level: ThinkingLevel): Pick<SimpleStreamOptions, "maxTokens" | "temperature"> {
  const maxTokens = requestMaxTokens(model, patch.maxTokens);
  const temperature = requestTemperature(model, level, patch.temperature);
  return { ...(maxTokens !== undefined && { maxTokens }), ...(temperature !== undefined && { temperature }) };
}

/**
 * Deferred mode reaches assistant requests only (reference §3.11): summaries and polls are built
 * from `toSimpleOptions`, which never carries it, so structural requests always run live.
 */
function deferredOf(patch: Record<string, JsonValue | undefined>): Pick<SimpleStreamOptions, "deferred"> {
  const deferred = patch.deferred;
  if (deferred === true) return { deferred: true };
  if (typeof deferred !== "object" || deferred === null || Array.isArray(deferred)) return {};
  const window = "window" in deferred ? deferred.window : undefined;
  return window === "15m" || window === "1h" || window === "24h" ? { deferred: { window } } : { deferred: {} };
}

function stringRecord(value: JsonValue | undefined): Record<string, string> | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === "string");
  return Object.fromEntries(entries);
}

function reasoningOf(level: ThinkingLevel): Pick<SimpleStreamOptions, "reasoning"> {
  return level === "off" ? {} : { reasoning: level };
}
