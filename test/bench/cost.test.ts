import { describe, expect, it } from "vitest";
import { costLines } from "../../bench/cost-row.ts";
import { costOf, dollars } from "../../bench/cost.ts";
import type { BenchLine } from "../../bench/report.ts";

// The arithmetic of `npm run bench`'s P12 cost row on fixed inputs, worked by hand against the
// price table in bench/README.md.

const keyed = (key: string, value: number): BenchLine => ({ id: "P12", what: "", case: key, median: "", p95: "", target: "", met: undefined, samples: 1, key, value });

describe("the cost of 1,000,000 simple turns at list prices", () => {
  it("prices every line: requests, duration at 128 MB, rows, a month of what is retained", () => {
    const cost = costOf({ workersRequests: 1, objectRequests: 4, webSocketMessages: 0, activeObjectSeconds: 0.02, rowsWritten: 30, rowsRead: 65, retainedBytes: 1000 });
    expect(cost.workersRequests).toBeCloseTo(0.3, 10); // 1 × $0.30
    expect(cost.objectRequests).toBeCloseTo(0.6, 10); // 4 × $0.15
    expect(cost.duration).toBeCloseTo(0.032, 10); // 0.02 s × 0.128 GB × $12.50 per million GB-s, × 1M
    expect(cost.rowsWritten).toBeCloseTo(30, 10); // 30 × $1.00
    expect(cost.rowsRead).toBeCloseTo(0.065, 10); // 65 × $0.001
    expect(cost.storageMonth).toBeCloseTo(0.2, 10); // 1,000 B × 1M = 1 GB × $0.20
    expect(cost.total).toBeCloseTo(31.197, 10);
  });

  it("bills incoming WebSocket messages 20:1 as Durable Object requests", () => {
    const cost = costOf({ workersRequests: 0, objectRequests: 0, webSocketMessages: 1, activeObjectSeconds: 0, rowsWritten: 0, rowsRead: 0, retainedBytes: 0 });
    expect(cost.objectRequests).toBeCloseTo(0.0075, 10); // 1/20 × $0.15
    expect(cost.total).toBeCloseTo(0.0075, 10);
  });

  it("scales with the number of turns", () => {
    const usage = { workersRequests: 1, objectRequests: 0, webSocketMessages: 0, activeObjectSeconds: 0, rowsWritten: 0, rowsRead: 0, retainedBytes: 0 };
    expect(costOf(usage, 10_000_000).total).toBeCloseTo(3, 10);
  });

  it("formats small amounts with four decimals and others with two", () => {
    expect(dollars(0.0075)).toBe("$0.0075");
    expect(dollars(31.197)).toBe("$31.20");
  });
});

describe("the P12 cost lines from a run's keyed counts", () => {
  const ours = [
    keyed("ours.cost.workersRequests", 1),
    keyed("ours.cost.objectRequests", 4),
    keyed("ours.cost.rowsWritten", 30),
    keyed("ours.cost.rowsRead", 65),
    keyed("ours.cost.retainedBytes", 1000),
    keyed("ours.cost.turnSeconds", 0.01),
  ];
  const peer = [
    keyed("peer.cost.workersRequests", 0),
    keyed("peer.cost.objectRequests", 0),
    keyed("peer.cost.webSocketMessages", 1),
    keyed("peer.cost.rowsWritten", 15),
    keyed("peer.cost.rowsRead", 0),
    keyed("peer.cost.retainedBytes", 0),
    keyed("peer.cost.turnSeconds", 0.02),
  ];
  const byCase = (lines: BenchLine[], text: string): BenchLine | undefined => lines.find((line) => line.case.startsWith(text));

  it("totals each side (ours: two objects active per turn; the peer: one) and judges the ratio and the rows written", () => {
    const lines = costLines([...ours, ...peer]);
    // Ours: 0.30 + 0.60 + (0.01 × 2 objects × 0.128 × 12.5 = 0.032) + 30 + 0.065 + 0.2.
    expect(byCase(lines, "ours: total")?.median).toBe("$31.20");
    // Peer: 0.0075 + (0.02 × 1 × 0.128 × 12.5 = 0.032) + 15.
    expect(byCase(lines, "peer: total")?.median).toBe("$15.04");
    const ratioLine = byCase(lines, "ratio ours / peer");
    expect(ratioLine?.median).toBe("2.07×");
    expect(ratioLine?.met).toBe(false);
    const rows = byCase(lines, "ours: SQL rows written per simple turn");
    expect(rows).toMatchObject({ median: "30", target: "≤ 13", met: false });
  });

  it("says which counts a run did not measure instead of pricing them", () => {
    const lines = costLines(ours.filter((line) => line.key !== "ours.cost.turnSeconds"));
    expect(byCase(lines, "ours: not measured")?.case).toContain("ours.cost.turnSeconds");
    expect(byCase(lines, "peer: not measured")).toBeDefined();
    expect(byCase(lines, "ratio ours / peer")?.met).toBeUndefined();
  });
});
