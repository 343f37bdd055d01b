import { createModelRegistry, modelCatalog } from "../../models/registry.ts";
import type { ApiError } from "../../schema/errors.ts";
import type { ModelIdentity } from "../../schema/lane.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import type { LaneConfigPatch } from "./session-host.ts";

// Lane configuration is checked when it is set (PATCH …/config, PUT …/lanes/{lane}), so a typo is
// a 422 naming it and nothing is written, instead of a 200 now and a run that fails later. The
// engine stores any identity and re-checks at generation time (reference §2.3, §3.4:
// `model_unavailable`, `configured_tools_unavailable`); this check must agree with that one, so it
// asks the same registry.

/** What a lane's configuration may name. */
export interface LaneConfigCatalog {
  hasModel(model: ModelIdentity): boolean;
  /** The first model the tenant can use, in GET /v1/models order; undefined when there is none. */
  firstModel(): ModelIdentity | undefined;
  /** The tool names a lane may activate. */
  knownTools(): ReadonlySet<string>;
}

/** Without a tool source no tool name is known (the session's definitions plug in as `knownTools`). */
const NO_TOOLS: ReadonlySet<string> = new Set();

/**
 * The catalog of the engine's own model registry (the same factory and scripted-models switch the
 * hosted harness is built with), narrowed to the providers the tenant can use now: a model of a
 * provider it has no credentials for is refused like an unknown one.
 */
export function laneConfigCatalog(
  /** `usableProviders`: default only the scripted models (when on), as for a tenant without credentials. */
  options: { scripted: boolean; usableProviders?: ReadonlySet<string> },
  knownTools: () => ReadonlySet<string> = () => NO_TOOLS,
): LaneConfigCatalog {
  const models = createModelRegistry({ scripted: options.scripted });
  const usable = options.usableProviders ?? new Set(options.scripted ? ["scripted"] : []);
  return {
    hasModel: ({ provider, modelId }) => usable.has(provider) && models.getModel(provider, modelId) !== undefined,
    firstModel: () => {
      const first = modelCatalog(models, usable)[0];
      return first && { provider: first.provider, modelId: first.modelId };
    },
    knownTools,
  };
}

/** The 422 UnknownModel for a model the catalog does not offer, or undefined when it does. */
export function modelProblem(model: ModelIdentity, catalog: LaneConfigCatalog): ApiError | undefined {
  if (catalog.hasModel(model)) return undefined;
  return unknownModel(model, `Unknown model ${modelName(model)}, or one this tenant has no credentials for; GET /v1/models lists the models you can use`);
}

/** Throws 422 UnknownModel or UnknownTool for the first part of `patch` the catalog does not know. */
export function assertKnownConfiguration(patch: LaneConfigPatch, catalog: LaneConfigCatalog): void {
  const problem = patch.model && modelProblem(patch.model, catalog);
  if (problem) throw new RpcError(problem);
  if (patch.activeTools) {
    const known = catalog.knownTools();
    const unknown = [...new Set(patch.activeTools.filter((name) => !known.has(name)))];
    if (unknown.length > 0) throw new RpcError({ code: "UnknownTool", message: `Unknown tools: ${unknown.join(", ")}`, details: { tools: unknown } });
  }
}

/** The default models that apply to a session's new lanes, most specific first. */
export interface DefaultModels {
  /** The session's `settings.defaultModel`. */
  session: ModelIdentity | null;
  /** The tenant's (`PUT /v1/me/default-model`). */
  tenant: ModelIdentity | null;
}

/**
 * The model of a lane created without one: the session's default, else the tenant's, else the
 * first model of the tenant's catalog. A configured default is never skipped silently: when the
 * tenant can no longer use it (a key deleted since), the creation is refused naming it, rather
 * than running on a provider nobody chose. Nothing usable at all is the same 422.
 */
export function newLaneModel(catalog: LaneConfigCatalog, defaults: DefaultModels): ModelIdentity {
  const configured = defaults.session ? { model: defaults.session, whose: "this session's default model (settings.defaultModel)" } : defaults.tenant ? { model: defaults.tenant, whose: "the tenant's default model (PUT /v1/me/default-model)" } : undefined;
  if (configured) {
    if (catalog.hasModel(configured.model)) return configured.model;
    const name = modelName(configured.model);
    throw new RpcError(unknownModel(configured.model, `A lane created without a model uses ${configured.whose}, ${name}, and this tenant cannot use it now; name a model from GET /v1/models, or change the default`));
  }
  const first = catalog.firstModel();
  if (first) return first;
  throw new RpcError({
    code: "UnknownModel",
    message: "No model is configured for new lanes: this tenant can use no model. Add a provider key (PUT /v1/providers/{provider}), then name a model or set a default (PUT /v1/me/default-model)",
  });
}

function modelName(model: ModelIdentity): string {
  return `${model.provider}/${model.modelId}`;
}

function unknownModel(model: ModelIdentity, message: string): ApiError {
  return { code: "UnknownModel", message, details: { provider: model.provider, modelId: model.modelId } };
}
