import type { Api, AssistantMessageEvent, AssistantMessageEventStream, FetchFunction, Model, SimpleStreamOptions } from "@earendil-works/pi-ai";
import { lazyStream } from "@earendil-works/pi-ai";
import type { MutableModels } from "@earendil-works/pi-ai/models";
import { boundedErrorText, providerFailureDiagnostic, type ProviderFailure } from "../harness/execution/provider-failure.ts";
import { providerRefusalDiagnostic, ProviderRequestRefused, type ProviderRefusal } from "../harness/execution/provider-refusal.ts";
import type { ModelsPort } from "../harness/execution/models.ts";
import { egressProblem } from "../schema/egress-policy.ts";
import type { ModelsDeployment } from "./deployment.ts";
import { emptyMessage } from "./deferred/deferred-stream.ts";
import { deploymentProviders } from "./deployment.ts";
import { hostedProvider } from "./hosted-providers.ts";
import { workersAiBindingRequest } from "./workers-ai.ts";

/**
 * How one request of a tenant reaches a provider: the tenant's own key (and base URL), the
 * deployment's configuration, or nothing. Resolved per request and held only for it: the key is
 * never stored by the session, never logged, never part of what the engine records.
 */
export type ProviderAccess = { source: "tenant"; apiKey: string; baseUrl?: string } | { source: "deployment" } | { source: "none"; reason: string };

/** What the tenant holds for one provider (asked of the TenantObject per request). */
export interface TenantProviderGrant {
  key?: { apiKey: string; baseUrl?: string };
  /**
   * Why the tenant's stored key cannot be used (it no longer opens: SECRETS_KEY changed since it
   * was stored), worded for the tenant; the secret box's own words stay in the tenant object.
   */
  unreadableKey?: string;
  /** Whether the tenant may use the deployment's own provider keys (an admin setting). */
  deploymentKeys: boolean;
}

/** A `{NAME}` placeholder pi-ai would fill from the provider's environment. */
const PLACEHOLDER = /\{[A-Za-z_]+\}/;

/**
 * The provider environment of a tenant's own request: its values win over the deployment's
 * (pi-ai merges per field) and name nothing, since a tenant's URL holds no placeholder to fill.
 */
const TENANT_ENV = { CLOUDFLARE_ACCOUNT_ID: "{CLOUDFLARE_ACCOUNT_ID}", CLOUDFLARE_GATEWAY_ID: "{CLOUDFLARE_GATEWAY_ID}" };

/** A tenant key wins over the deployment's; the deployment's only when the tenant may use it. */
export function providerAccess(provider: string, grant: TenantProviderGrant, deployment: ModelsDeployment): ProviderAccess {
  if (grant.key) return { source: "tenant", ...grant.key };
  // The tenant chose its own key (and perhaps its own host): its requests never fall back to the
  // service's key meanwhile, which would bill the service and send them elsewhere unasked.
  if (grant.unreadableKey !== undefined) return { source: "none", reason: grant.unreadableKey };
  if (!deploymentProviders(deployment).includes(provider)) {
    return { source: "none", reason: `No API key is configured for provider ${provider}; set one with PUT /v1/providers/${provider}` };
  }
  if (!grant.deploymentKeys) {
    return { source: "none", reason: `This tenant may not use the service's key for provider ${provider}; set its own with PUT /v1/providers/${provider}` };
  }
  return { source: "deployment" };
}

export interface TenantModelsOptions {
  deployment: ModelsDeployment;
  /** The tenant's grant for a provider, fetched when a request starts (inside the admitted effect). */
  grant: (provider: string) => Promise<TenantProviderGrant>;
  /** The HTTP transport (tests inject wire fixtures here); the platform's `fetch` otherwise. */
  fetch?: FetchFunction;
}

/**
 * The Models port of one tenant's session (ARCHITECTURE D9): pi-ai's registry, with each hosted
 * request's credentials resolved when it starts, the provider's HTTP status and Retry-After
 * observed on the way (provider-failure.ts), and in-process retries off so that every retry is a
 * durable retry wait the engine records.
 */
export function tenantModels(registry: MutableModels, options: TenantModelsOptions): ModelsPort {
  return {
    getModel: (provider, modelId) => registry.getModel(provider, modelId),
    streamSimple: (model, context, streamOptions = {}) =>
      hostedProvider(model.provider) === undefined
        ? registry.streamSimple(model, context, streamOptions)
        : hostedStream(options, model, streamOptions, (request) => registry.streamSimple(request.model, context, request.options)),
    // A poll reaches the provider like a request does: with the tenant's credentials, resolved now.
    streamDeferred: (model, handle, streamOptions = {}) =>
      hostedProvider(model.provider) === undefined
        ? registry.streamDeferred(model, handle, streamOptions)
        : hostedStream(options, model, streamOptions, (request) => registry.streamDeferred(request.model, handle, { ...request.options, wait: streamOptions.wait ?? 0 })),
    cancelDeferred: async (model, handle, cancelOptions = {}) => {
      if (hostedProvider(model.provider) === undefined) return registry.cancelDeferred(model, handle, cancelOptions);
      const request = await hostedRequest(options, model, cancelOptions);
      if ("failure" in request) return;
      await registry.cancelDeferred(request.model, handle, request.options);
    },
  };
}

/** What the transport saw of the request's last exchange; `refused` when the service would not make or follow it. */
interface Seen {
  status?: number;
  retryAfterMs?: number;
  refused?: { refusal: ProviderRefusal; message: string };
}

/** One hosted request: the model (a tenant's base URL applied) and options with credentials and transport. */
type HostedRequest = { model: Model<Api>; options: SimpleStreamOptions; seen: Seen } | { failure: string };

async function hostedRequest(options: TenantModelsOptions, model: Model<Api>, streamOptions: SimpleStreamOptions): Promise<HostedRequest> {
  const seen: Seen = {};
  // Every request the provider's SDK makes passes the egress policy (a base URL stored in local
  // development or before the policy is refused here, before any connection) and never follows a
  // redirect: its target would receive the request's body and credentials (ARCHITECTURE D17).
  const observe = (transport: FetchFunction): FetchFunction => async (input, init) => {
    const refuse = (refusal: ProviderRefusal, message: string): never => {
      seen.refused = { refusal, message };
      throw new ProviderRequestRefused(refusal, message);
    };
    const problem = egressProblem(requestUrl(input), options.deployment.localDev, "baseUrl");
    if (problem) refuse("unsafe_address", `Provider ${model.provider} was not contacted: ${problem.message}`);
    const response = await transport(input, { ...init, redirect: "manual" });
    seen.status = response.status;
    const retryAfterMs = retryAfterOf(response.headers);
    if (retryAfterMs === undefined) delete seen.retryAfterMs;
    else seen.retryAfterMs = retryAfterMs;
    if (response.status >= 300 && response.status <= 399) {
      await response.body?.cancel();
      refuse("redirect", `Provider ${model.provider} answered with a redirect (HTTP ${response.status}), which provider requests never follow; set the provider's final address as its baseUrl`);
    }
    return response;
  };
  const access = providerAccess(model.provider, await options.grant(model.provider), options.deployment);
  if (access.source === "none") return { failure: access.reason };
  const base: SimpleStreamOptions = { ...streamOptions, maxRetries: streamOptions.maxRetries ?? 0 };
  const binding = access.source === "deployment" ? workersAiBindingRequest(model, options.deployment) : undefined;
  const transport = observe(binding?.fetch ?? options.fetch ?? ((input, init) => fetch(input, init)));
  if (access.source === "tenant") {
    const target = access.baseUrl ? { ...model, baseUrl: access.baseUrl } : model;
    // pi-ai fills a URL's {…} placeholders (a Cloudflare account and gateway) from the provider's
    // environment, which is the deployment's: a tenant's own key never takes them from there. Its
    // request goes where its baseUrl says, with the account in it, or nowhere.
    if (PLACEHOLDER.test(target.baseUrl)) {
      return {
        failure: `A tenant's own key for provider ${model.provider} needs a baseUrl with the account (and gateway) in it, such as https://gateway.ai.cloudflare.com/v1/<account>/<gateway>/compat; set it with PUT /v1/providers/${model.provider}`,
      };
    }
    return { model: target, options: { ...base, apiKey: access.apiKey, env: TENANT_ENV, fetch: transport }, seen };
  }
  if (binding) return { model: binding.model, options: { ...base, ...binding.options, fetch: transport }, seen };
  return { model, options: { ...base, fetch: transport }, seen };
}

function hostedStream(
  options: TenantModelsOptions,
  model: Model<Api>,
  streamOptions: SimpleStreamOptions,
  start: (request: { model: Model<Api>; options: SimpleStreamOptions }) => AssistantMessageEventStream,
): AssistantMessageEventStream {
  return lazyStream(
    model,
    async () => {
      const request = await hostedRequest(options, model, streamOptions);
      if ("failure" in request) return single(failed(model, request.failure, { kind: "auth", provider: model.provider }));
      return classified(start(request), model.provider, request.seen);
    },
    undefined,
    streamOptions.signal,
  );
}

/**
 * The response with its failure classified: a refused request says why (not the SDK's "Connection
 * error."), an auth refusal names the provider, never the key, and every error text is bounded.
 */
async function* classified(stream: AssistantMessageEventStream, provider: string, seen: Seen): AsyncGenerator<AssistantMessageEvent> {
  for await (const event of stream) {
    if (event.type !== "error" || event.reason !== "error") {
      yield event;
      continue;
    }
    if (seen.refused) {
      const { refusal, message } = seen.refused;
      yield { ...event, error: { ...event.error, errorMessage: message, diagnostics: [...(event.error.diagnostics ?? []), providerRefusalDiagnostic(refusal, Date.now())] } };
      continue;
    }
    if (seen.status === undefined || seen.status < 400) {
      yield { ...event, error: bounded(event.error) };
      continue;
    }
    const failure: ProviderFailure =
      seen.status === 401 || seen.status === 403 || refusedKey(seen.status, event.error.errorMessage)
        ? { kind: "auth", provider, status: seen.status }
        : { kind: "http", status: seen.status, ...(seen.retryAfterMs !== undefined && { retryAfterMs: seen.retryAfterMs }) };
    // Some providers echo part of the key in their 401 text: the message is replaced, not kept.
    const errorMessage = failure.kind === "auth" ? authMessage(provider, seen.status) : event.error.errorMessage;
    const error = bounded({ ...event.error, ...(errorMessage !== undefined && { errorMessage }), diagnostics: [...(event.error.diagnostics ?? []), providerFailureDiagnostic(failure, Date.now())] });
    yield { ...event, error };
  }
}

/**
 * A refused key that a provider answers with another status than 401/403: Google answers an
 * invalid API key 400 INVALID_ARGUMENT (reason API_KEY_INVALID), and some hosts answer 400
 * "Incorrect API key provided: xai-…abcd". Taken as an auth refusal, its text (which may echo part
 * of the key) is replaced like a 401's.
 */
const REFUSED_KEY = /API_KEY_INVALID|\b(?:incorrect|invalid)\s+api[\s_-]?key|\bapi[\s_-]?key\s+(?:is\s+)?(?:not\s+valid|invalid|incorrect)/i;

function refusedKey(status: number, errorMessage: string | undefined): boolean {
  return status === 400 && errorMessage !== undefined && REFUSED_KEY.test(errorMessage);
}

/** `message` with its error text bounded (the provider's wording is not ours to bound), as the engine keeps it. */
function bounded<T extends { errorMessage?: string }>(message: T): T {
  const text = message.errorMessage;
  return text === undefined ? message : { ...message, errorMessage: boundedErrorText(text) };
}

/** The URL a transport is asked for, whatever form the SDK passes it in. */
function requestUrl(input: string | URL | Request): string {
  if (typeof input === "string") return input;
  return input instanceof URL ? input.href : input.url;
}

async function* single(event: AssistantMessageEvent): AsyncGenerator<AssistantMessageEvent> {
  yield event;
}

function authMessage(provider: string, status: number): string {
  return `Provider ${provider} refused the request's credentials (HTTP ${status}); check the API key configured for ${provider}`;
}

function failed(model: Model<Api>, errorMessage: string, failure: ProviderFailure): AssistantMessageEvent {
  const timestamp = Date.now();
  return {
    type: "error",
    reason: "error",
    error: { ...emptyMessage(model, "error"), errorMessage, diagnostics: [providerFailureDiagnostic(failure, timestamp)], timestamp },
  };
}

/** `retry-after-ms`, or `retry-after` in seconds or as an HTTP date; undefined when absent or invalid. */
export function retryAfterOf(headers: Headers, now = Date.now()): number | undefined {
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const after = headers.get("retry-after");
  if (after === null) return undefined;
  const seconds = Number.parseFloat(after);
  const delay = Number.isNaN(seconds) ? Date.parse(after) - now : seconds * 1000;
  return Number.isFinite(delay) ? Math.max(0, Math.round(delay)) : undefined;
}
