// P12 (cost): what 1,000,000 simple turns cost at Cloudflare's published list prices, from the
// counts a run measured. Pure arithmetic, no runtime imports: the reporter (Node) calls it once every
// row ran, and test/bench/cost.test.ts checks it on fixed inputs. The table and its sources are in
// bench/README.md ("P12 — cost of 1,000,000 simple turns"); keep the two in step.

/** List prices in US dollars, Workers Paid plan, beyond the included usage (read 2026-12-05). */
export const PRICES = {
  /** Workers Standard: $0.30 per million requests. */
  workersRequestPerMillion: 0.3,
  /** Durable Objects: $0.15 per million requests (RPC calls, HTTP requests, alarm invocations, WebSocket messages). */
  durableObjectRequestPerMillion: 0.15,
  /** Incoming WebSocket messages are billed 20:1 as Durable Object requests. */
  webSocketMessagesPerBilledRequest: 20,
  /** Durable Objects duration: $12.50 per million GB-s. */
  durationPerMillionGbSeconds: 12.5,
  /** Duration is billed on the 128 MB an object is allocated, whatever it uses. */
  objectMemoryGb: 0.128,
  /** SQLite-backed storage: $0.001 per million rows read. */
  rowsReadPerMillion: 0.001,
  /** SQLite-backed storage: $1.00 per million rows written. */
  rowsWrittenPerMillion: 1,
  /** SQLite-backed storage: $0.20 per GB-month stored. */
  storedGbMonth: 0.2,
} as const;

export const PRICES_DATE = "2026-12-05";
export const TURNS_PRICED = 1_000_000;

/** What one simple turn uses, per side, every figure per turn. */
export interface TurnUsage {
  /** Requests to the front Worker (a WebSocket upgrade is one, shared by the socket's turns). */
  workersRequests: number;
  /** Durable Object requests other than WebSocket messages: RPC calls, HTTP requests, alarm invocations. */
  objectRequests: number;
  /** Incoming WebSocket messages (billed 20:1). */
  webSocketMessages: number;
  /** Seconds an object is active (billed for duration), summed over the objects the turn keeps active. */
  activeObjectSeconds: number;
  rowsWritten: number;
  rowsRead: number;
  /** Bytes the turn leaves stored. */
  retainedBytes: number;
}

/** Dollars per 1,000,000 turns, by cost line. */
export interface TurnCost {
  workersRequests: number;
  objectRequests: number;
  duration: number;
  rowsWritten: number;
  rowsRead: number;
  /** One month of storing what the turns retained. */
  storageMonth: number;
  total: number;
}

/** Bytes in a GB as the storage price counts them (decimal GB, as Cloudflare's billing pages do). */
const BYTES_PER_GB = 1e9;

/** The list-price cost of `turns` turns that each use `usage`. */
export function costOf(usage: TurnUsage, turns = TURNS_PRICED): TurnCost {
  const millions = turns / 1_000_000;
  const billedObjectRequests = usage.objectRequests + usage.webSocketMessages / PRICES.webSocketMessagesPerBilledRequest;
  const lines = {
    workersRequests: usage.workersRequests * millions * PRICES.workersRequestPerMillion,
    objectRequests: billedObjectRequests * millions * PRICES.durableObjectRequestPerMillion,
    duration: usage.activeObjectSeconds * PRICES.objectMemoryGb * millions * PRICES.durationPerMillionGbSeconds,
    rowsWritten: usage.rowsWritten * millions * PRICES.rowsWrittenPerMillion,
    rowsRead: usage.rowsRead * millions * PRICES.rowsReadPerMillion,
    storageMonth: ((usage.retainedBytes * turns) / BYTES_PER_GB) * PRICES.storedGbMonth,
  };
  const total = lines.workersRequests + lines.objectRequests + lines.duration + lines.rowsWritten + lines.rowsRead + lines.storageMonth;
  return { ...lines, total };
}

/** "$28.00", "$0.0250" below a dollar (the small lines stay readable). */
export const dollars = (value: number): string => `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;
