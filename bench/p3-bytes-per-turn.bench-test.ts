import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { SessionObject } from "../durable-objects/session/session-object.ts";
import type { Write } from "../harness/session/storage.ts";
import {
  completedTurn,
  estimatedBytes,
  messagePayloadBytes,
  sessionRowBytes,
  openBenchEngine,
  ROW_OVERHEAD_BYTES,
  settle,
  type CommitRecord,
  type SqlTally,
} from "./engine-rig.ts";
import { bytes, count, summarize, type BenchLine } from "./report.ts";
import { createBenchSession } from "./seed.ts";

// P3: bytes written to SQLite per simple turn, beyond the entries' own payload.
// Targets: ≤ 2 KB, and ≤ 0.5× the Agents SDK's bytes per turn (the peer's tally comes from the
// server rows, bench/node/p1-turn-latency.server-bench.ts; the reporter takes the ratio).
//
// TURNS prompt → stop turns (scripted/echo) through a real AgentHarness over the object's SQLite
// (bench/engine-rig.ts). Three measures per turn, each minus the entries' own payload (the JSON of
// the user and the assistant message):
//   estimate  every Storage.commit's writes: encoded payload + address text + a fixed per-row
//             overhead (ROW_OVERHEAD_BYTES), plus the `meta` row each commit rewrites;
//   bound     the bytes bound into every INSERT/UPDATE/DELETE the adapter and the host ran
//             (SqlTap), i.e. exactly what SQLite was handed, with SQLite's own rowsWritten;
//   retained  growth of `sql.databaseSize` (page-granular), averaged over blocks of BLOCK turns.

const WHAT = "bytes written per simple turn beyond the entries' own payload";
const WARMUP_TURNS = 5;
const TURNS = 200;
const BLOCK = 25;
const TARGET_BYTES = 2048;

const promptText = (turn: number): string =>
  `Turn ${turn}: please look at the next part of the repository and tell me what changed since the previous step, with a short summary and a list of the files involved.`;

interface Turn {
  commits: CommitRecord[];
  sql: { inside: SqlTally; outside: SqlTally };
}

interface Block {
  turns: number;
  growth: number;
  ownPayload: number;
}

const ownPayloadOf = (turn: Turn): number =>
  turn.commits.reduce((sum, commit) => sum + commit.writes.reduce((inner, write) => inner + messagePayloadBytes(write), 0), 0);

const estimateOf = (turn: Turn): number =>
  turn.commits.reduce((sum, commit) => sum + sessionRowBytes(commit) + commit.writes.reduce((inner, write) => inner + estimatedBytes(write), 0), 0);

/** Where a turn's estimated bytes go: entries, usage, each value/list namespace, the meta row. */
function categoryOf(write: Write): string {
  switch (write.kind) {
    case "entry":
      return write.entry.type === "message" ? `entries (message/${write.entry.message.role})` : `entries (${write.entry.type})`;
    case "usage":
      return "usage rows";
    case "value":
    case "list":
      return `${write.namespace}${write.op === "delete" ? " (delete)" : ""}`;
  }
}

it("P3 bytes written per simple turn", async ({ task }) => {
  const stub = await createBenchSession("p3");
  const { turns, blocks, transcriptLength, lastReply } = await runInDurableObject(stub, async (_instance: SessionObject, state) => {
    const engine = await openBenchEngine(state);
    const lane = await engine.harness.lane("main");
    for (let turn = 0; turn < WARMUP_TURNS; turn++) await completedTurn(lane, promptText(turn));
    await settle();
    engine.storage.take();
    engine.tap.take();
    const turns: Turn[] = [];
    const blocks: Block[] = [];
    let blockStart = engine.tap.databaseSize;
    let blockPayload = 0;
    for (let turn = WARMUP_TURNS; turn < WARMUP_TURNS + TURNS; turn++) {
      await completedTurn(lane, promptText(turn));
      await settle();
      const measured: Turn = { commits: engine.storage.take(), sql: engine.tap.take() };
      turns.push(measured);
      blockPayload += ownPayloadOf(measured);
      if (turns.length % BLOCK === 0) {
        const size = engine.tap.databaseSize;
        blocks.push({ turns: BLOCK, growth: size - blockStart, ownPayload: blockPayload });
        blockStart = size;
        blockPayload = 0;
      }
    }
    const entries = lane.findEntries({ order: "newestFirst", limit: 1 });
    const last = entries[0];
    const lastReply = last?.type === "message" && last.message.role === "assistant" ? last.message.content : undefined;
    return { turns, blocks, transcriptLength: lane.findEntries({ order: "oldestFirst" }).length, lastReply };
  });

  // Correctness: every turn placed its prompt and the echoed reply.
  expect(transcriptLength).toBe(2 * (WARMUP_TURNS + TURNS));
  expect(lastReply).toEqual([{ type: "text", text: promptText(WARMUP_TURNS + TURNS - 1) }]);
  expect(turns).toHaveLength(TURNS);

  const own = summarize(turns.map(ownPayloadOf));
  const estimate = summarize(turns.map((turn) => estimateOf(turn) - ownPayloadOf(turn)));
  const estimateTotal = summarize(turns.map(estimateOf));
  const bound = summarize(turns.map((turn) => turn.sql.inside.boundBytes + turn.sql.outside.boundBytes - ownPayloadOf(turn)));
  const rows = summarize(turns.map((turn) => turn.sql.inside.rowsWritten + turn.sql.outside.rowsWritten));
  const statements = summarize(turns.map((turn) => turn.sql.inside.statements + turn.sql.outside.statements));
  const retained = summarize(blocks.map((block) => (block.growth - block.ownPayload) / block.turns));
  const retainedTotal = summarize(blocks.map((block) => block.growth / block.turns));
  const line = (fields: Omit<BenchLine, "id">): BenchLine => ({ id: "P3", ...fields });
  const lines: BenchLine[] = [
    line({
      what: "entries' own payload per turn (user + assistant message JSON)",
      case: `scripted/echo, ~160-char prompt, turns ${WARMUP_TURNS + 1}–${WARMUP_TURNS + TURNS}`,
      median: bytes(own.median),
      p95: bytes(own.p95),
      target: "—",
      met: undefined,
      samples: own.samples,
    }),
    line({
      what: WHAT,
      case: `estimate: payload + address + ${ROW_OVERHEAD_BYTES} B/row, incl. session rows (total ${bytes(estimateTotal.median)})`,
      median: bytes(estimate.median),
      p95: bytes(estimate.p95),
      target: "≤ 2 KB",
      met: estimate.median <= TARGET_BYTES,
      samples: estimate.samples,
    }),
    line({
      what: WHAT,
      case: `bound into INSERT/UPDATE/DELETE (SqlTap; ${count(statements.median)} statements, ${count(rows.median)} rows written)`,
      median: bytes(bound.median),
      p95: bytes(bound.p95),
      target: "≤ 2 KB",
      met: bound.median <= TARGET_BYTES,
      samples: bound.samples,
      key: "ours.written",
      value: bound.median + own.median,
    }),
    line({
      what: "rows written per turn (SQLite rowsWritten, index rows included)",
      case: "same turns (SqlTap)",
      median: count(rows.median),
      p95: count(rows.p95),
      target: "—",
      met: undefined,
      samples: rows.samples,
    }),
    line({
      what: "retained per turn beyond the entries' own payload (databaseSize growth)",
      case: `${blocks.length} blocks of ${BLOCK} turns (total ${bytes(retainedTotal.median)}/turn; page-granular)`,
      median: bytes(retained.median),
      p95: bytes(retained.p95),
      target: "—",
      met: undefined,
      samples: retained.samples,
    }),
    line({
      what: "written per turn, all of it (payload included), ours / the Agents SDK peer's",
      case: `bound bytes: ours ${bytes(bound.median + own.median)} (session object) / the peer's SQL + KV writes (server rows)`,
      median: "—",
      p95: "—",
      target: "≤ 0.50×",
      met: undefined,
      samples: bound.samples,
      ratioOf: { of: "ours.written", to: "peer.written", atMost: 0.5 },
    }),
    line({
      what: "rows written per turn, ours / the Agents SDK peer's",
      // Both sides whole: ours through POST …/prompt over every object, alarms included (P12's
      // count), as the peer's is its whole isolate over a real turn. The engine rig's count above
      // leaves out the acceptance and the tenant object.
      case: "SQL rows + KV writes per turn: ours through POST …/prompt, every object, alarms included (P12) / the peer's",
      median: "—",
      p95: "—",
      target: "—",
      met: undefined,
      samples: rows.samples,
      ratioOf: { of: "ours.cost.rowsWritten", to: "peer.rowsWritten" },
    }),
  ];

  // Where the estimated bytes of a turn go (mean over the measured turns).
  const byCategory = new Map<string, number>();
  const add = (category: string, amount: number): void => void byCategory.set(category, (byCategory.get(category) ?? 0) + amount / turns.length);
  for (const turn of turns) {
    for (const commit of turn.commits) {
      add("session rows (the counters checkpoint with its usage totals, its share per ledger row)", sessionRowBytes(commit));
      for (const write of commit.writes) {
        const size = estimatedBytes(write);
        const payload = messagePayloadBytes(write);
        add(categoryOf(write), size - payload);
        if (payload > 0) add("(entries' own payload, excluded)", payload);
      }
    }
  }
  const breakdown = [...byCategory]
    .sort((a, b) => b[1] - a[1])
    .map(([category, amount]) => `  ${bytes(amount).padStart(9)}  ${category}`);
  task.meta.benchLines = lines;
  task.meta.benchNotes = [
    {
      id: "P3",
      lines: [`P3 estimate per turn by destination (mean over ${turns.length} turns; each write = payload + address + per-row overhead):`, ...breakdown],
    },
  ];
});
