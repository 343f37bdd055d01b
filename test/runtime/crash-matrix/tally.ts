import { afterAll, describe, expect, it } from "vitest";
import { caseName, casesOf, COMBINATIONS, FAMILY, LEAVES, POSITIONS, type Family, type MatrixCase } from "./table.ts";

// The printed summary of the crash matrix (issue: "a printed summary of cases run and passed"):
// each family's file records every case it runs, prints one line per leaf × position and a total
// at the end, and asserts that every reachable case of its family that is not sampled out ran and
// that every leaf of the family was hit.

export class Tally {
  private readonly ran = new Map<string, MatrixCase>();
  private readonly passed = new Set<string>();

  constructor(private readonly family: Family) {}

  /** The cases of this family that run (sampled-out ones are counted, not run). */
  cases(): MatrixCase[] {
    return casesOf(this.family).filter((c) => c.runs);
  }

  async run(c: MatrixCase, body: () => Promise<void>): Promise<void> {
    this.ran.set(caseName(c), c);
    await body();
    this.passed.add(caseName(c));
  }

  summary(): string {
    const reachable = casesOf(this.family);
    const lines = [`crash matrix [${this.family}]: ${COMBINATIONS} combinations in the whole matrix; this family: ${reachable.length} reachable, ${reachable.filter((c) => !c.runs).length} sampled out, ${this.ran.size} ran, ${this.passed.size} passed`];
    for (const leaf of LEAVES.filter((l) => FAMILY[l] === this.family)) {
      for (const position of POSITIONS) {
        const here = [...this.ran.values()].filter((c) => c.leaf === leaf && c.position === position);
        if (here.length === 0) continue;
        const ok = here.filter((c) => this.passed.has(caseName(c))).length;
        lines.push(`  ${leaf} × ${position}: ${here.length} ran, ${ok} passed (${here.map((c) => c.intent).join(", ")})`);
      }
    }
    return lines.join("\n");
  }

  /** Every case of the family ran (none skipped or filtered) and every leaf of the family was hit. */
  assertComplete(): void {
    expect([...this.ran.keys()].sort()).toEqual(this.cases().map(caseName).sort());
    const hit = new Set([...this.ran.values()].map((c) => c.leaf));
    expect([...hit].sort()).toEqual(LEAVES.filter((leaf) => FAMILY[leaf] === this.family).sort());
  }
}

/** Declares one family's file: a test per case (named `leaf × position × intent`), then the summary and the completeness check. */
export function matrixFamily(family: Family, title: string, runCase: (c: MatrixCase) => Promise<void>): void {
  const tally = new Tally(family);
  describe(`crash matrix: ${title}`, () => {
    for (const c of tally.cases()) it(caseName(c), () => tally.run(c, () => runCase(c)));
  });
  afterAll(() => {
    console.log(tally.summary());
    tally.assertComplete();
  });
}
