import type { Api, Model, ModelCost, ModelInputModality } from "@earendil-works/pi-ai";
import { createModels, type Models, type MutableModels } from "@earendil-works/pi-ai/models";
import { HOSTED_PROVIDERS } from "./hosted-providers.ts";
import { createScriptedProvider } from "./scripted/provider.ts";
import type { ScriptSource } from "./scripted/script-source.ts";
import type { ScriptedClock } from "./scripted/playback.ts";
import { withBoundedUsage } from "./usage-bounds.ts";

// The Models port (ARCHITECTURE D9): pi-ai's own registry. The hosted providers (hosted-providers.ts)
// are always registered; whether a tenant may use one is decided per request (tenant-models.ts).
// The scripted provider is registered when enabled (always in local development and tests; in a
// deployment only with SCRIPTED_MODELS=on).

export interface ModelRegistryOptions {
  scripted: boolean;
  /** The step source of `scripted/script` for the current request (the hosting session's). */
  scriptSource?: () => ScriptSource | undefined;
  clock?: ScriptedClock;
  /**
   * The deployment's secrets by name (provider keys, Cloudflare account ids). pi-ai's provider
   * auth reads its variables through this only: never through `process.env`, so a deployment's
   * key reaches a tenant only when tenant-models.ts decided it may.
   */
  secret?: (name: string) => string | undefined;
}

/** The registry; every response's usage is bounded on the way out (usage-bounds.ts). */
export function createModelRegistry(options: ModelRegistryOptions): MutableModels {
  const secret = options.secret ?? (() => undefined);
  const models = withBoundedUsage(
    createModels({ authContext: { env: async (name) => secret(name), fileExists: async () => false } }),
  );
  // Scripted first: the catalog lists providers in registration order, and its first model is
  // what a new lane without a model or default gets (scripted/echo wherever scripted models are on).
  if (options.scripted) {
    models.setProvider(
      createScriptedProvider({
        ...(options.scriptSource !== undefined && { source: options.scriptSource }),
        ...(options.clock !== undefined && { clock: options.clock }),
      }),
    );
  }
  for (const provider of HOSTED_PROVIDERS) models.setProvider(provider.create());
  return models;
}

/** One row of GET /v1/models. */
export interface ModelCatalogEntry {
  provider: string;
  modelId: string;
  name: string;
  contextWindow: number;
  maxTokens: number;
  input: ModelInputModality[];
  reasoning: boolean;
  /** Dollars per million tokens. */
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number };
}

/** The chat models the registry knows of the given providers, in provider order. */
export function modelCatalog(models: Models, providers: ReadonlySet<string>): ModelCatalogEntry[] {
  return models
    .getModels()
    .filter((model: Model<Api>) => providers.has(model.provider))
    .map((model: Model<Api>) => ({
      provider: model.provider,
      modelId: model.id,
      name: model.name,
      contextWindow: model.contextWindow,
      maxTokens: model.maxTokens,
      input: [...model.input],
      reasoning: model.reasoning,
      cost: perMillion(model.cost),
    }));
}

function perMillion(cost: ModelCost): ModelCatalogEntry["cost"] {
  return { input: cost.input, output: cost.output, cacheRead: cost.cacheRead, cacheWrite: cost.cacheWrite };
}
