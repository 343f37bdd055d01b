import * as v from "valibot";
import { JsonValueSchema } from "./json.ts";

/**
 * Bounds of one provider request's usage: far above any real request, far below where sums lose
 * precision or overflow (a total of `Infinity` serializes as `null`). Token counts are integers.
 */
export const MAX_USAGE_TOKENS = 1e12;
/** The bound of each cost number of one request, in the provider's currency unit (dollars). */
export const MAX_USAGE_COST = 1e9;

const tokens = v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(MAX_USAGE_TOKENS));
const cost = v.pipe(v.number(), v.finite(), v.minValue(0), v.maxValue(MAX_USAGE_COST));

function usageSchema<T extends v.GenericSchema<number>, C extends v.GenericSchema<number>>(count: T, money: C) {
  return v.object({
    input: count,
    output: count,
    cacheRead: count,
    cacheWrite: count,
    cacheWrite1h: v.optional(count),
    reasoning: v.optional(count),
    totalTokens: count,
    cost: v.object({
      input: money,
      output: money,
      cacheRead: money,
      cacheWrite: money,
      total: money,
      totalFromProvider: v.optional(v.boolean()),
    }),
  });
}

/** Token and cost usage of one provider request (pi-ai `Usage`), bounded. */
export const UsageSchema = usageSchema(tokens, cost);
export type Usage = v.InferOutput<typeof UsageSchema>;

/** Whether a stored value is one request's usage within its bounds. */
export function isUsage(value: unknown): value is Usage {
  return v.is(UsageSchema, value);
}

/** Sums of many requests' usage (session stats, tenant totals): finite and non-negative. */
const finite = v.pipe(v.number(), v.finite(), v.minValue(0));
export const UsageTotalsSchema = usageSchema(finite, finite);

/** One row of the append-only usage ledger (reference §1.7). */
export const UsageRowSchema = v.object({
  id: v.string(),
  seq: v.number(),
  usage: UsageSchema,
  entryId: v.optional(v.string()),
  adjustment: v.boolean(),
  details: v.optional(JsonValueSchema),
});
export type UsageRow = v.InferOutput<typeof UsageRowSchema>;

export const SessionStatsSchema = v.object({
  messageCount: v.number(),
  usage: UsageTotalsSchema,
});
export type SessionStats = v.InferOutput<typeof SessionStatsSchema>;
