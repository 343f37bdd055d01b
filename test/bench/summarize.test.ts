import { describe, expect, it } from "vitest";
import { summarize } from "../../bench/report.ts";

// bench/report.ts `summarize` (every row's median and p95): a bench must never turn a
// broken measurement into a plausible number: a sample that is not a finite number (e.g. a P7/P14
// latency whose commit stamp was missing, `receivedAt - undefined`) must not be silently sorted in.

describe("summarize: samples that are not numbers", () => {
  it("refuses a NaN sample instead of reporting a p95 below a real sample", () => {
    // With NaN in the array, `sort((a, b) => a - b)` sees NaN as "equal" and leaves the order
    // unsorted: an unguarded sort returns median NaN and p95 1 while 5 is a real sample (p95 < max).
    expect(() => summarize([5, Number.NaN, 1])).toThrow(RangeError);
  });

  it("never reports a finite p95 below the p95 of the finite samples (one NaN among 21)", () => {
    // 1..20 shuffled, one NaN in the middle: the true p95 of the finite samples is 19. The NaN splits
    // the sort into two runs that are never merged, and an unguarded sort returns median 11 and p95 14:
    // two finite, plausible, wrong numbers (a p95 judged against a threshold would read "met").
    const samples = [9, 13, 3, 6, 19, 2, 10, 12, Number.NaN, 1, 5, 14, 16, 11, 18, 20, 15, 4, 8, 7, 17];
    let result: ReturnType<typeof summarize> | undefined;
    try {
      result = summarize(samples);
    } catch {
      return; // refusing the broken sample is the right answer
    }
    expect(result.p95).toBeGreaterThanOrEqual(19);
  });
});
