import type { Usage } from "../../schema/usage.ts";

export function zeroUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/**
 * Adds one ledger row to running totals. Optional counters appear in the total once any row
 * reports them, so a totals object never claims a breakdown the providers did not give.
 */
export function addUsage(total: Usage, row: Usage): Usage {
  const sum: Usage = {
    input: total.input + row.input,
    output: total.output + row.output,
    cacheRead: total.cacheRead + row.cacheRead,
    cacheWrite: total.cacheWrite + row.cacheWrite,
    totalTokens: total.totalTokens + row.totalTokens,
    cost: {
      input: total.cost.input + row.cost.input,
      output: total.cost.output + row.cost.output,
      cacheRead: total.cost.cacheRead + row.cost.cacheRead,
      cacheWrite: total.cost.cacheWrite + row.cost.cacheWrite,
      total: total.cost.total + row.cost.total,
    },
  };
  // The optional counts: zero and absent mean the same (the ledger stores neither), so a sum of
  // zero is left out, and totals read alike from memory, from storage and at the tenant.
  const cacheWrite1h = (total.cacheWrite1h ?? 0) + (row.cacheWrite1h ?? 0);
  if (cacheWrite1h !== 0) sum.cacheWrite1h = cacheWrite1h;
  const reasoning = (total.reasoning ?? 0) + (row.reasoning ?? 0);
  if (reasoning !== 0) sum.reasoning = reasoning;
  return sum;
}
