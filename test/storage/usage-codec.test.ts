import { describe, expect, it } from "vitest";
import { fullUsage, sparseUsage, USAGE_EXPANSION_BYTES } from "../../durable-objects/session/storage/usage-codec.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import type { Usage } from "../../schema/usage.ts";

describe("usage codec (sparse at rest, full on read)", () => {
  const priced: Usage = {
    input: 1200,
    output: 300,
    cacheRead: 0,
    cacheWrite: 64,
    cacheWrite1h: 0,
    reasoning: 120,
    totalTokens: 1564,
    cost: { input: 0.0012, output: 0, cacheRead: 0, cacheWrite: 0.0001, total: 0.0013, totalFromProvider: true },
  };

  it("round-trips every shape, keeping present optional fields and zeros they carried", () => {
    expect(fullUsage(sparseUsage(priced))).toEqual(withoutZeroOptional(priced));
    expect(fullUsage(sparseUsage(zeroUsage()))).toEqual(zeroUsage());
  });

  it("leaves zeros and an all-zero cost out, and an earlier full row decodes unchanged", () => {
    expect(sparseUsage({ ...zeroUsage(), input: 5, output: 7, totalTokens: 12 })).toEqual({ input: 5, output: 7, totalTokens: 12 });
    expect(fullUsage(priced)).toEqual(priced);
  });

  it("never expands a row by more than the page budget allows for", () => {
    const expansion = JSON.stringify(fullUsage(sparseUsage(zeroUsage()))).length - JSON.stringify(sparseUsage(zeroUsage())).length;
    expect(expansion).toBeLessThanOrEqual(USAGE_EXPANSION_BYTES);
  });
});

/** Optional counts that were zero come back absent: zero and absent mean the same for them. */
function withoutZeroOptional(usage: Usage): Usage {
  const { cacheWrite1h, reasoning, ...rest } = usage;
  return { ...rest, ...(cacheWrite1h ? { cacheWrite1h } : {}), ...(reasoning ? { reasoning } : {}) };
}
