import type { Api, Model } from "@earendil-works/pi-ai";
import { SCRIPTED_API, SCRIPTED_PROVIDER } from "../scripted/provider.ts";
import { anthropicBatch } from "./anthropic-batch.ts";
import { openaiBackground } from "./openai-background.ts";

// Which models can answer deferred: the scripted ones (a script's deferred step), OpenAI's
// Responses models (background responses) and Anthropic's Messages models (message batches).
// Asked when a setting would make a lane's runs deferred, so a model that cannot is refused then
// (422), not when a run is already under way.

const DEFERRED_APIS: Readonly<Record<string, readonly string[]>> = {
  [SCRIPTED_PROVIDER]: [SCRIPTED_API],
  openai: openaiBackground.apis,
  anthropic: anthropicBatch.apis,
};

export function canDefer(model: Pick<Model<Api>, "provider" | "api">): boolean {
  return DEFERRED_APIS[model.provider]?.includes(model.api) ?? false;
}
