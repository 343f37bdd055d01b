import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { SessionObject } from "../durable-objects/session/session-object.ts";
import { completedTurn, openBenchEngine, settle } from "./engine-rig.ts";
import { count, ratio, summarize, type BenchLine } from "./report.ts";
import { createBenchSession } from "./seed.ts";

// P11: SQL rows read per warm simple turn as the branch grows (no compaction). Target: flat —
// turn 200 ≤ 1.2× turn 10.
//
// A real AgentHarness over the object's SQLite (bench/engine-rig.ts) runs TURNS prompt → stop turns
// on one lane with the instant `scripted/echo` model. SqlTap sums SQLite's own `rowsRead` over every
// statement of a turn (the context read, placement checks, the commits' own lookups, the due-work
// schedule). A warm lane keeps the context path it assembled and extends it with what it places,
// so the bounded context is not read again per turn; a cold object still reads only the bounded
// context (P5/P6).

const TURNS = 200;
const EARLY = { from: 6, to: 15 };
const LATE = { from: TURNS - 9, to: TURNS };

const promptText = (turn: number): string => `Turn ${turn}: summarize what changed since the previous step, briefly.`;

it("P11 SQL rows read per warm simple turn", async ({ task }) => {
  const stub = await createBenchSession("p11");
  const rowsPerTurn = await runInDurableObject(stub, async (_instance: SessionObject, state) => {
    const engine = await openBenchEngine(state);
    const lane = await engine.harness.lane("main");
    engine.tap.take();
    const rows: number[] = [];
    for (let turn = 1; turn <= TURNS; turn++) {
      await completedTurn(lane, promptText(turn));
      await settle();
      const { inside, outside } = engine.tap.take();
      rows.push(inside.rowsRead + outside.rowsRead);
    }
    expect(lane.findEntries({ order: "oldestFirst" })).toHaveLength(2 * TURNS);
    return rows;
  });
  const window = (range: { from: number; to: number }) => rowsPerTurn.slice(range.from - 1, range.to);
  const early = summarize(window(EARLY));
  const late = summarize(window(LATE));
  const growth = late.median / early.median;
  const line = (fields: Omit<BenchLine, "id">): BenchLine => ({ id: "P11", ...fields });
  task.meta.benchLines = [
    line({
      what: "SQL rows read per warm simple turn",
      case: `turns ${EARLY.from}–${EARLY.to} of one branch (scripted/echo)`,
      median: count(early.median),
      p95: count(early.p95),
      target: "—",
      met: undefined,
      samples: early.samples,
    }),
    line({
      what: "SQL rows read per warm simple turn",
      case: `turns ${LATE.from}–${LATE.to} of the same branch`,
      median: count(late.median),
      p95: count(late.p95),
      target: "—",
      met: undefined,
      samples: late.samples,
    }),
    line({
      what: "growth with history: turn ~200 / turn ~10 (medians)",
      case: `${count(late.median)} / ${count(early.median)} rows`,
      median: ratio(growth),
      p95: "—",
      target: "≤ 1.2×",
      met: growth <= 1.2,
      samples: late.samples,
    }),
    line({
      what: "rows read per turn, ours / the Agents SDK peer's",
      // Both sides whole: ours through POST …/prompt over every object, alarms included (P12's
      // count over turns 11–210), as the peer's is its whole isolate over a real turn (turns
      // 11–210). The engine rig above leaves out the acceptance and the tenant object.
      case: "ours through POST …/prompt, every object, alarms included (P12, turns 11–210) / the peer's (turns 11–210, server rows)",
      median: "—",
      p95: "—",
      target: "≤ 1.00×",
      met: undefined,
      samples: late.samples,
      ratioOf: { of: "ours.cost.rowsRead", to: "peer.rowsRead", atMost: 1 },
    }),
  ];
});
