import * as v from "valibot";
import { JsonValueSchema } from "./json.ts";

const count = v.pipe(v.number(), v.finite(), v.minValue(0));

/** Token and cost usage of one provider request (pi-ai `Usage`). */
export const UsageSchema = v.object({
  input: count,
  output: count,
  cacheRead: count,
  cacheWrite: count,
  cacheWrite1h: v.optional(count),
  reasoning: v.optional(count),
  totalTokens: count,
  cost: v.object({
    input: count,
    output: count,
    cacheRead: count,
    cacheWrite: count,
    total: count,
    totalFromProvider: v.optional(v.boolean()),
  }),
});
export type Usage = v.InferOutput<typeof UsageSchema>;

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
  usage: UsageSchema,
});
export type SessionStats = v.InferOutput<typeof SessionStatsSchema>;
