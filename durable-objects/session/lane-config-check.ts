import { createModelRegistry } from "../../models/registry.ts";
import type { ApiError } from "../../schema/errors.ts";
import type { ModelIdentity } from "../../schema/lane.ts";
import { RpcError } from "../rpc-errors.ts";
import type { LaneConfigPatch } from "./session-host.ts";

// Lane configuration is checked when it is set (PATCH …/config, PUT …/lanes/{lane}), so a typo is
// a 422 naming it and nothing is written, instead of a 200 now and a run that fails later. The
// engine stores any identity and re-checks at generation time (reference §2.3, §3.4:
// `model_unavailable`, `configured_tools_unavailable`); this check must agree with that one, so it
// asks the same registry.

/** What a lane's configuration may name. */
export interface LaneConfigCatalog {
  hasModel(model: ModelIdentity): boolean;
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
    knownTools,
  };
}

/** Throws 422 UnknownModel or UnknownTool for the first part of `patch` the catalog does not know. */
export function assertKnownConfiguration(patch: LaneConfigPatch, catalog: LaneConfigCatalog): void {
  if (patch.model && !catalog.hasModel(patch.model)) {
    throw new RpcError(unknownModel(patch.model, `Unknown model ${patch.model.provider}/${patch.model.modelId}, or one this tenant has no credentials for; GET /v1/models lists the models you can use`));
  }
  if (patch.activeTools) {
    const known = catalog.knownTools();
    const unknown = [...new Set(patch.activeTools.filter((name) => !known.has(name)))];
    if (unknown.length > 0) throw new RpcError({ code: "UnknownTool", message: `Unknown tools: ${unknown.join(", ")}`, details: { tools: unknown } });
  }
}

/**
 * A lane about to be created: its configuration is checked as above, and without a `model` the
 * default model of new lanes must be one this deployment offers.
 */
export function assertCreatableLane(patch: LaneConfigPatch, catalog: LaneConfigCatalog, defaultModel: ModelIdentity): void {
  assertKnownConfiguration(patch, catalog);
  if (!patch.model && !catalog.hasModel(defaultModel)) {
    const name = `${defaultModel.provider}/${defaultModel.modelId}`;
    throw new RpcError(unknownModel(defaultModel, `New lanes use ${name} unless a model is given, and this deployment does not offer it; name a model from GET /v1/models`));
  }
}

function unknownModel(model: ModelIdentity, message: string): ApiError {
  return { code: "UnknownModel", message, details: { provider: model.provider, modelId: model.modelId } };
}
