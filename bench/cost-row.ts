import { costOf, dollars, PRICES_DATE, TURNS_PRICED, type TurnCost, type TurnUsage } from "./cost.ts";
import { count, ratio, type BenchLine } from "./report.ts";

// P12 (cost): turns the measured units of a run (lines keyed `ours.cost.*` by
// bench/p12-cost-counts.bench-test.ts and `peer.cost.*`/`ours.cost.turnSeconds` by the P1 server
// bench) into the cost lines the reporter prints once every row ran.

const ID = "P12";
/** QUALITY.md P12: ≤ 0.5× the peer's cost; rows written per simple turn ≤ 13, every object counted. */
const COST_RATIO_TARGET = 0.5;
const ROWS_WRITTEN_TARGET = 13;

/**
 * Objects a turn keeps active, for the duration estimate: ours, the session object and the tenant
 * object (authentication and reservation, then the settlement forward); the peer, its one agent.
 * Each is counted active for the whole turn's wall time as the client saw it: an upper bound (the
 * client, the dev proxy and the front worker are in that time; the tenant's two calls are short).
 */
export const ACTIVE_OBJECTS = { ours: 2, peer: 1 } as const;

type Side = keyof typeof ACTIVE_OBJECTS;

const COST_LINES: readonly { field: Exclude<keyof TurnCost, "total">; label: string }[] = [
  { field: "workersRequests", label: "Workers requests" },
  { field: "objectRequests", label: "Durable Object requests (socket messages at 20:1)" },
  { field: "duration", label: "Durable Object duration (estimate: turn wall time × objects × 128 MB)" },
  { field: "rowsWritten", label: "SQL rows written" },
  { field: "rowsRead", label: "SQL rows read" },
  { field: "storageMonth", label: "storage, one month of what the turns retain" },
];

/** A side's measured usage per turn, or the keys this run did not measure. */
export function usageOf(side: Side, values: ReadonlyMap<string, number>): TurnUsage | { missing: string[] } {
  const missing: string[] = [];
  const value = (name: string, absentMeans?: number): number => {
    const found = values.get(`${side}.cost.${name}`);
    if (found !== undefined) return found;
    if (absentMeans !== undefined) return absentMeans;
    missing.push(`${side}.cost.${name}`);
    return Number.NaN;
  };
  const usage: TurnUsage = {
    workersRequests: value("workersRequests"),
    objectRequests: value("objectRequests"),
    // Ours takes no socket message in a turn: the key is only reported by the peer.
    webSocketMessages: value("webSocketMessages", side === "ours" ? 0 : undefined),
    activeObjectSeconds: value("turnSeconds") * ACTIVE_OBJECTS[side],
    rowsWritten: value("rowsWritten"),
    rowsRead: value("rowsRead"),
    retainedBytes: value("retainedBytes"),
  };
  return missing.length > 0 ? { missing } : usage;
}

/** The cost lines of the run, from the keyed values among `lines`. */
export function costLines(lines: readonly BenchLine[]): BenchLine[] {
  const values = new Map<string, number>();
  for (const line of lines) if (line.key !== undefined && line.value !== undefined) values.set(line.key, line.value);
  const what = `cost of ${count(TURNS_PRICED)} simple turns at list prices (${PRICES_DATE})`;
  const line = (fields: Pick<BenchLine, "case" | "median"> & Partial<BenchLine>): BenchLine => ({ id: ID, what, p95: "—", target: "—", met: undefined, samples: 0, ...fields });
  const out: BenchLine[] = [];
  const totals: Partial<Record<Side, number>> = {};
  for (const side of ["ours", "peer"] as const) {
    const usage = usageOf(side, values);
    if ("missing" in usage) {
      out.push(line({ case: `${side}: not measured in this run (missing ${usage.missing.join(", ")})`, median: "—" }));
      continue;
    }
    const cost = costOf(usage);
    for (const { field, label } of COST_LINES) out.push(line({ case: `${side}: ${label}`, median: dollars(cost[field]) }));
    out.push(line({ case: `${side}: total`, median: dollars(cost.total) }));
    totals[side] = cost.total;
  }
  const { ours, peer } = totals;
  if (ours !== undefined && peer !== undefined && peer > 0) {
    const value = ours / peer;
    out.push(line({ case: "ratio ours / peer (total)", median: ratio(value), target: `≤ ${ratio(COST_RATIO_TARGET)}`, met: value <= COST_RATIO_TARGET }));
  } else {
    out.push(line({ case: "ratio ours / peer (total) (not measured in this run)", median: "—", target: `≤ ${ratio(COST_RATIO_TARGET)}` }));
  }
  const rows = values.get("ours.cost.rowsWritten");
  out.push(line({ case: "ours: SQL rows written per simple turn, every object", median: rows === undefined ? "—" : count(rows), target: `≤ ${ROWS_WRITTEN_TARGET}`, met: rows === undefined ? undefined : rows <= ROWS_WRITTEN_TARGET }));
  return out;
}
