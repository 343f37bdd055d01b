// Shared by the bench files (running in workerd) and the table reporter (running in Node): the
// shape of one measured row, the statistics, and the table layout. No runtime-specific imports.

/** One line of a QUALITY.md table: a case of a row with its samples already summarized. */
export interface BenchLine {
  /** QUALITY.md row id, e.g. "P5". */
  id: string;
  what: string;
  case: string;
  /** Summary cells, already formatted (e.g. "3.21 ms" or "1.08×"). */
  median: string;
  p95: string;
  target: string;
  /** undefined: informational line, no target of its own. */
  met: boolean | undefined;
  samples: number;
  /** A measured number other lines compare against by `key` (e.g. across the two projects). */
  key?: string;
  value?: number;
  /**
   * Filled in by the reporter once every row ran: the value of line `of` divided by the value of
   * line `to` (median column), met when ≤ `atMost`; "—" when either was not measured in this run.
   */
  ratioOf?: { of: string; to: string; atMost?: number };
}

/** The lines with their `ratioOf` filled in from the keyed lines among `lines`. */
export function resolveRatios(lines: readonly BenchLine[]): BenchLine[] {
  const values = new Map<string, number>();
  for (const line of lines) if (line.key !== undefined && line.value !== undefined) values.set(line.key, line.value);
  return lines.map((line) => {
    if (!line.ratioOf) return line;
    const of = values.get(line.ratioOf.of);
    const to = values.get(line.ratioOf.to);
    if (of === undefined || to === undefined || to === 0) return { ...line, median: "—", case: `${line.case} (not measured in this run)`, met: undefined };
    const value = of / to;
    const atMost = line.ratioOf.atMost;
    return { ...line, median: ratio(value), met: atMost === undefined ? undefined : value <= atMost };
  });
}

/** Free text a row prints under its table (e.g. a breakdown of what one sample consisted of). */
export interface BenchNote {
  /** QUALITY.md row id the note belongs to. */
  id: string;
  lines: string[];
}

/** What P10 measures (bench/node/bundle-size.ts, in Node), handed to workerd through `provide`/`inject`. */
export interface BundleSize {
  /** Bytes of every module wrangler would upload. */
  uploadBytes: number;
  /** Their gzip size (level 9), summed per module. */
  gzipBytes: number;
  modules: number;
  /** wrangler's own "Total Upload: … / gzip: …" line, verbatim. */
  wranglerLine: string;
}

declare module "vitest" {
  interface ProvidedContext {
    bundleSize: BundleSize | { error: string };
  }
  interface TaskMeta {
    /** Lines a bench test hands to bench/table-reporter.ts (test meta crosses the workerd boundary). */
    benchLines?: BenchLine[];
    /** Notes printed under the row's table, in order. */
    benchNotes?: BenchNote[];
  }
}

export interface Summary {
  samples: number;
  median: number;
  p95: number;
  min: number;
  max: number;
}

/** Median (mean of the two middle samples when even) and nearest-rank p95. */
export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0) throw new RangeError("no samples");
  // A sample that is not a number (a latency whose stamp was missing) would leave the sort unsorted
  // and the percentiles plausible and wrong: a broken measurement fails the row instead.
  if (!samples.every(Number.isFinite)) throw new RangeError("a sample is not a finite number");
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (index: number): number => sorted[Math.min(Math.max(index, 0), sorted.length - 1)] ?? Number.NaN;
  const middle = sorted.length / 2;
  const median = sorted.length % 2 === 1 ? at(Math.floor(middle)) : (at(middle - 1) + at(middle)) / 2;
  return {
    samples: sorted.length,
    median,
    p95: at(Math.ceil(0.95 * sorted.length) - 1),
    min: at(0),
    max: at(sorted.length - 1),
  };
}

export const ms = (value: number): string => `${value < 10 ? value.toFixed(3) : value.toFixed(1)} ms`;
export const ratio = (value: number): string => `${value.toFixed(2)}×`;
/** A byte count: "812 B", or "3.41 KB" (1 KB = 1,024 B) from 1,024 up. */
export const bytes = (value: number): string =>
  Math.abs(value) < 1024 ? `${Math.round(value)} B` : `${(value / 1024).toFixed(2)} KB`;
/** A count or rate: integers grouped ("1,234"), fractions with 4 decimals below 1 and 2 from 1 up. */
export const count = (value: number): string =>
  Number.isInteger(value) ? value.toLocaleString("en") : value.toFixed(value < 1 ? 4 : 2);

export function verdict(met: boolean | undefined): string {
  if (met === undefined) return "—";
  return met ? "met" : "not met";
}

/** A markdown table: id | what | case | median | p95 | target | verdict. */
export function formatTable(lines: readonly BenchLine[]): string {
  const header = ["id", "what", "case", "median", "p95", "target", "verdict"];
  const rows = lines.map((line) => [
    line.id,
    line.what,
    // A computed line (no samples of its own, e.g. a cost from other rows' counts) shows no n.
    line.samples > 0 ? `${line.case} (n=${line.samples})` : line.case,
    line.median,
    line.p95,
    line.target,
    verdict(line.met),
  ]);
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => (row[column] ?? "").length)));
  const render = (cells: readonly string[]): string =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ")} |`;
  return [render(header), `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`, ...rows.map(render)].join("\n");
}
