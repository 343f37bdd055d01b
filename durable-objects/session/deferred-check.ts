import { canDefer } from "../../models/deferred/support.ts";
import { createModelRegistry } from "../../models/registry.ts";
import type { ModelIdentity } from "../../schema/lane.ts";
import { defersAnswers, type DeferredMode } from "../../schema/settings.ts";
import { RpcError } from "../rpc/rpc-errors.ts";

// Deferred mode is refused where it is chosen (a run request's `deferred`, the session's
// `streamOptions.deferred`, a lane's model while the session defers), as 422 DeferredUnsupported
// with nothing written, instead of a run that would quietly answer live or fail later
// (ISSUE 12: "models without support refuse it at configuration time").

/** Model identities resolve to their API the same way for every tenant: one registry per isolate. */
let catalog: ReturnType<typeof createModelRegistry> | undefined;

/** Whether `model` can answer deferred; an unknown model cannot (its own check names it). */
export function modelCanDefer(model: ModelIdentity): boolean {
  catalog ??= createModelRegistry({ scripted: true });
  const known = catalog.getModel(model.provider, model.modelId);
  return known !== undefined && canDefer(known);
}

/** Throws 422 DeferredUnsupported when `mode` asks for deferred answers of models that cannot give them. */
export function assertCanDefer(mode: DeferredMode | undefined, lanes: readonly { lane: string; model: ModelIdentity }[]): void {
  if (!defersAnswers(mode)) return;
  const refused = lanes.filter(({ model }) => !modelCanDefer(model));
  if (refused.length === 0) return;
  const names = refused.map(({ lane, model }) => `${model.provider}/${model.modelId} (lane ${lane})`).join(", ");
  throw new RpcError({
    code: "DeferredUnsupported",
    message: `Deferred answers need a model that can give them (OpenAI Responses models, Anthropic models, scripted/script); ${names} cannot`,
    details: { lanes: refused.map(({ lane }) => lane) },
  });
}
