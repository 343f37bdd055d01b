import type { Api, Model } from "@earendil-works/pi-ai";
import { SCRIPTED_PROVIDER } from "../scripted/provider.ts";
import { anthropicBatch } from "./anthropic-batch.ts";
import { openaiBackground } from "./openai-background.ts";

// Which models can answer deferred: `scripted/script` (a script's deferred step; echo never defers), OpenAI's
// Responses models (background responses) and Anthropic's Messages models (message batches).
// Asked when a setting would make a lane's runs deferred, so a model that cannot is refused then
// (422), not when a run is already under way.

const DEFERRED_APIS: Readonly<Record<string, readonly string[]>> = {
  openai: openaiBackground.apis,
  anthropic: anthropicBatch.apis,
};

export function canDefer(model: Pick<Model<Api>, "provider" | "api" | "id">): boolean {
  if (model.provider === SCRIPTED_PROVIDER) return model.id === "script";
  return DEFERRED_APIS[model.provider]?.includes(model.api) ?? false;
}
