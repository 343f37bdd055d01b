import { writeFileSync } from "node:fs";
import os from "node:os";
import type { Reporter, TestModule } from "vitest/node";
import { costLines } from "../cost-row.ts";
import { formatTable, resolveRatios, type BenchLine, type BenchNote } from "../report.ts";

/** Where every run writes its lines as JSON (next to this directory's README). */
const RESULTS_PATH = new URL("../results.json", import.meta.url);

/** The machine the numbers came from; workerd has no OS information, so Node prints it. */
export function machineLine(): string {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() ?? "unknown CPU";
  const memory = `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB`;
  return `machine: ${model}, ${cpus.length} cores, ${memory} RAM, node ${process.version}, ${os.platform()} ${os.arch()}`;
}

/**
 * Collects the lines each bench test left in its task meta (they are produced inside workerd) and
 * prints them after the run as one table per QUALITY.md row, preceded by the machine line.
 */
export default class TableReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const byRow = new Map<string, BenchLine[]>();
    const notes = new Map<string, BenchNote[]>();
    const reported: BenchLine[] = [];
    for (const module of testModules) {
      for (const testCase of module.children.allTests()) {
        const meta = testCase.meta();
        reported.push(...(meta.benchLines ?? []));
        for (const note of meta.benchNotes ?? []) notes.set(note.id, [...(notes.get(note.id) ?? []), note]);
      }
    }
    // Ratios between rows (ours in workerd against the peer over the wire) once every row ran.
    // P12's cost, from the units both projects measured, when any of them ran.
    const cost = reported.some((line) => line.key?.includes(".cost.")) ? costLines(reported) : [];
    for (const line of [...resolveRatios(reported), ...cost]) byRow.set(line.id, [...(byRow.get(line.id) ?? []), line]);
    const out: string[] = ["", "## Benchmarks (QUALITY.md performance rows)", "", machineLine(), ""];
    if (byRow.size === 0) out.push("(no bench lines were reported)");
    const ids = [...byRow.keys()].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
    for (const id of ids) {
      out.push(formatTable(byRow.get(id) ?? []), "");
      for (const note of notes.get(id) ?? []) out.push(...note.lines, "");
    }
    process.stdout.write(`${out.join("\n")}\n`);
    // The run's numbers for tools and later comparison (build output: gitignored).
    const results = { machine: machineLine(), finishedAt: new Date().toISOString(), rows: Object.fromEntries(ids.map((id) => [id, { lines: byRow.get(id) ?? [], notes: (notes.get(id) ?? []).flatMap((note) => note.lines) }])) };
    writeFileSync(RESULTS_PATH, `${JSON.stringify(results, null, 2)}\n`);
  }
}
