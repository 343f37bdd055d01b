import type { Api } from "@earendil-works/pi-ai";
import type { ThinkingLevel } from "../../schema/lane.ts";
import { MAX_TOKENS_LIMIT, TEMPERATURE_LIMIT } from "../../schema/settings.ts";
import type { ProviderModel } from "./models.ts";

// The session's `maxTokens` and `temperature` (schema/settings.ts) as one request to one model
// asks for them. The setting is session-wide while models differ per lane, so a value a model
// cannot take is fitted to it rather than failing the run. A `before_request` hook may have
// replaced the values, so they are bounded again here.

/** Providers whose temperature range is narrower than TEMPERATURE_LIMIT (Anthropic Messages: 0–1). */
const TEMPERATURE_MAX_BY_API: Partial<Record<Api, number>> = { "anthropic-messages": 1 };

/** The output maximum to ask for: the requested one, never above the model's own maximum. */
export function requestMaxTokens(model: ProviderModel, requested: unknown): number | undefined {
  if (typeof requested !== "number" || !Number.isSafeInteger(requested) || requested < 1) return undefined;
  const bounded = Math.min(requested, MAX_TOKENS_LIMIT);
  return model.maxTokens > 0 ? Math.min(bounded, model.maxTokens) : bounded;
}

/**
 * The temperature to send, or undefined: none while a reasoning model thinks (providers refuse a
 * sampling temperature with extended thinking or reasoning effort), otherwise clamped to the
 * provider's range.
 */
export function requestTemperature(model: ProviderModel, thinkingLevel: ThinkingLevel, requested: unknown): number | undefined {
  if (typeof requested !== "number" || !Number.isFinite(requested)) return undefined;
  if (model.reasoning && thinkingLevel !== "off") return undefined;
  return Math.min(Math.max(requested, 0), TEMPERATURE_MAX_BY_API[model.api] ?? TEMPERATURE_LIMIT);
}
