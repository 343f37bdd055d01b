import type { Api, Model, ModelInputModality } from "@earendil-works/pi-ai";
import { createModels, type Models, type MutableModels } from "@earendil-works/pi-ai/models";
import { createScriptedProvider } from "./scripted/provider.ts";
import type { ScriptSource } from "./scripted/script-source.ts";
import type { ScriptedClock } from "./scripted/playback.ts";
import { withBoundedUsage } from "./usage-bounds.ts";

// The Models port (ARCHITECTURE D9): pi-ai's own registry. The scripted provider is registered when
// enabled (always in local development and tests; in a deployment only with SCRIPTED_MODELS=on).
// Real providers join here later, each imported by subpath so the bundle carries only what it uses.

export interface ModelRegistryOptions {
  scripted: boolean;
  /** The step source of `scripted/script` for the current request (the hosting session's). */
  scriptSource?: () => ScriptSource | undefined;
  clock?: ScriptedClock;
}

/** The registry; every response's usage is bounded on the way out (usage-bounds.ts). */
export function createModelRegistry(options: ModelRegistryOptions): MutableModels {
  const models = withBoundedUsage(createModels());
  if (options.scripted) {
    models.setProvider(
      createScriptedProvider({
        ...(options.scriptSource !== undefined && { source: options.scriptSource }),
        ...(options.clock !== undefined && { clock: options.clock }),
      }),
    );
  }
  return models;
}

/** One row of GET /v1/models. */
export interface ModelCatalogEntry {
  provider: string;
  modelId: string;
  contextWindow: number;
  maxTokens: number;
  input: ModelInputModality[];
  reasoning: boolean;
}

/** The chat models the registry knows, in provider order. */
export function modelCatalog(models: Models): ModelCatalogEntry[] {
  return models.getModels().map((model: Model<Api>) => ({
    provider: model.provider,
    modelId: model.id,
    contextWindow: model.contextWindow,
    maxTokens: model.maxTokens,
    input: [...model.input],
    reasoning: model.reasoning,
  }));
}
