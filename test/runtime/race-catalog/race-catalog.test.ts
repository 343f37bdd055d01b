import type { ImportGlobFunction } from "vite";
import { afterAll, describe, expect, it } from "vitest";
import { raceCatalog } from "./catalog.ts";
import type { CoveredBy } from "./types.ts";

// Runs every entry of the race catalog in both orders (reference §9.2, §9.3 Tier C): an order run
// here must observe its stated outcome and leave no invariant violation; an order proven by an
// existing test must still name a file and title that exist, so the catalog cannot rot.

declare global {
  interface ImportMeta {
    /** Vite's glob import (the test runner transforms every test module with Vite). */
    readonly glob: ImportGlobFunction;
  }
}

// Vite names each glob match by its path relative to this file; the catalog names files from test/.
const sources = import.meta.glob<string>("/test/**/*.test.ts", { query: "?raw", import: "default", eager: true });

function sourceOf(covered: CoveredBy): string | undefined {
  return sources[`/test/${covered.file}`];
}

const tally = { races: raceCatalog.length, ordersRun: 0, ordersCovered: 0, passed: 0 };

describe("race catalog (reference §9.2)", () => {
  it("names each race once, with two distinct orders", () => {
    const names = raceCatalog.map((entry) => entry.name);
    expect(new Set(names).size).toBe(names.length);
    for (const entry of raceCatalog) expect(entry.orders[0].label, entry.name).not.toBe(entry.orders[1].label);
  });

  for (const entry of raceCatalog) {
    describe(entry.name, () => {
      for (const order of entry.orders) {
        if ("coveredBy" in order) {
          it(`${order.label}: covered by ${order.coveredBy.file}`, () => {
            const source = sourceOf(order.coveredBy);
            expect(source, `${order.coveredBy.file} exists`).toBeDefined();
            expect(source?.includes(order.coveredBy.title), `"${order.coveredBy.title}" is in ${order.coveredBy.file}`).toBe(true);
            tally.ordersCovered++;
            tally.passed++;
          });
        } else {
          it(`${order.label}: ${order.expected}`, async () => {
            tally.ordersRun++;
            const result = await order.run();
            expect(result.outcome).toEqual(order.outcome);
            expect(result.violations).toEqual([]);
            tally.passed++;
          });
        }
      }
    });
  }
});

afterAll(() => {
  const orders = tally.ordersRun + tally.ordersCovered;
  console.log(`race catalog: ${tally.races} races, ${orders} orders (${tally.ordersRun} run here, ${tally.ordersCovered} proven by the tests they name), ${tally.passed} passed`);
});
