import type { Usage } from "../../../schema/usage.ts";

// A ledger row's usage as stored (QUALITY P3): zero counts and zero costs are left out, and the
// cost object too when every cost is zero, since most rows of most providers carry several
// zeros (cache reads and writes, and every cost of an unpriced model). Reads restore the full
// shape, so nothing outside this adapter sees the difference. Rows written whole by earlier
// builds decode unchanged.

type CostKey = Exclude<keyof Usage["cost"], "totalFromProvider">;
const COUNTS = ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] as const;
const OPTIONAL_COUNTS = ["cacheWrite1h", "reasoning"] as const;
const COSTS: readonly CostKey[] = ["input", "output", "cacheRead", "cacheWrite", "total"];

/** At most how many bytes decoding adds to a stored row (every zero field and the cost object). */
export const USAGE_EXPANSION_BYTES = 160;

export type StoredUsage = Partial<Omit<Usage, "cost">> & { cost?: Partial<Usage["cost"]> };

export function sparseUsage(usage: Usage): StoredUsage {
  const stored: StoredUsage = {};
  for (const key of [...COUNTS, ...OPTIONAL_COUNTS]) {
    const count = usage[key];
    if (count !== undefined && count !== 0) stored[key] = count;
  }
  const cost: Partial<Usage["cost"]> = {};
  for (const key of COSTS) if (usage.cost[key] !== 0) cost[key] = usage.cost[key];
  if (usage.cost.totalFromProvider !== undefined) cost.totalFromProvider = usage.cost.totalFromProvider;
  if (Object.keys(cost).length > 0) stored.cost = cost;
  return stored;
}

export function fullUsage(stored: StoredUsage): Usage {
  const usage: Usage = {
    input: stored.input ?? 0,
    output: stored.output ?? 0,
    cacheRead: stored.cacheRead ?? 0,
    cacheWrite: stored.cacheWrite ?? 0,
    ...(stored.cacheWrite1h !== undefined && { cacheWrite1h: stored.cacheWrite1h }),
    ...(stored.reasoning !== undefined && { reasoning: stored.reasoning }),
    totalTokens: stored.totalTokens ?? 0,
    cost: {
      input: stored.cost?.input ?? 0,
      output: stored.cost?.output ?? 0,
      cacheRead: stored.cost?.cacheRead ?? 0,
      cacheWrite: stored.cost?.cacheWrite ?? 0,
      total: stored.cost?.total ?? 0,
      ...(stored.cost?.totalFromProvider !== undefined && { totalFromProvider: stored.cost.totalFromProvider }),
    },
  };
  return usage;
}
