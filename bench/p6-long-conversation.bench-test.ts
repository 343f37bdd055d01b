import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { SessionObject } from "../durable-objects/session/session-object.ts";
import { projectEntries } from "../harness/execution/context.ts";
import type { AgentLane } from "../harness/runtime/lane.ts";
import { branchTip } from "../harness/session/builtin-addresses.ts";
import type { Session } from "../harness/session/session.ts";
import type { AgentMessage } from "../schema/messages.ts";
import { completedTurn, ECHO, openBenchEngine, settle, type BenchEngine } from "./engine-rig.ts";
import { count, ms, ratio, summarize, type BenchLine } from "./report.ts";
import { BRANCH, createBenchSession } from "./seed.ts";

// P6, long conversation: 2,000 turns on one lane with threshold compaction on, as a long-running
// agent would live. Target: context assembly and the cost of a turn at turn 2,000 within 1.5× of
// turn 50 — compaction keeps the context bounded, so nothing may grow with the history.
//
// `scripted/echo` plays a model with an 8,192-token window and 1,024 output tokens (the bench's
// Models port reports these limits; the provider is the real scripted one). With 2,048 tokens kept
// free and about 1,000 kept verbatim, the lane compacts by itself every few dozen turns; the echoed
// summary is cut at the output limit like a real model's. Per turn: the wall time of the whole turn
// (prompt → settled record, compactions included when they happen) and of a cold context
// assembly right after it (the bounded read and its projection, as a restored object would do).
// Windows of 20 turns around turn 50 and ending at turn 2,000; medians compared. workerd's clock
// ticks in whole milliseconds, so a turn's time is coarse; the SQL rows a turn reads are its exact
// companion.

const TURNS = 2_000;
const EARLY = { from: 41, to: 60 };
const LATE = { from: TURNS - 19, to: TURNS };
/**
 * Assemblies timed together after a measured turn: workerd's clock ticks in whole milliseconds and
 * one assembly takes about one, so the mean of 50 resolves ~0.02 ms (10 read 1.57× once where
 * reruns read 0.83×). Other turns assemble once, as before.
 */
const ASSEMBLIES = 50;
const inWindow = (turn: number): boolean => (turn >= EARLY.from && turn <= EARLY.to) || (turn >= LATE.from && turn <= LATE.to);
const LIMITS = { contextWindow: 8_192, maxTokens: 1_024 };
const COMPACTION = { enabled: true, reserveTokens: 2_048, keepRecentTokens: 1_000 };

const promptText = (turn: number): string =>
  `Turn ${turn}: look at the next part of the repository and tell me what changed since the previous step, with a short summary and the files involved.`;

/** The bounded context read and projected (reference §6.4 steps 1–5), as a cold request builds it. */
function assembleContext(session: Session): AgentMessage[] {
  const tip = session.getValue(branchTip(BRANCH))?.value;
  if (tip === undefined || tip === null) throw new Error("the lane has no tip");
  return projectEntries(session.scanBranch({ start: tip, order: "newestFirst", stopAtType: "compaction" }).reverse());
}

interface TurnSample {
  turnMs: number;
  /** SQLite's rowsRead over every statement of the turn (the context reads, the commits' lookups). */
  rowsRead: number;
  assemblyMs: number;
  contextEntries: number;
  compactions: number;
}

async function measureTurn(engine: BenchEngine, lane: AgentLane, turn: number): Promise<TurnSample> {
  const assemblies = inWindow(turn) ? ASSEMBLIES : 1;
  const session = engine.session;
  engine.tap.take();
  const started = performance.now();
  await completedTurn(lane, promptText(turn));
  const turnMs = performance.now() - started;
  const { inside, outside } = engine.tap.take();
  const assemblyStarted = performance.now();
  let context: AgentMessage[] = [];
  for (let read = 0; read < assemblies; read++) context = assembleContext(session);
  const assemblyMs = (performance.now() - assemblyStarted) / assemblies;
  expect(context.at(-1)?.role).toBe("assistant");
  return { turnMs, rowsRead: inside.rowsRead + outside.rowsRead, assemblyMs, contextEntries: lane.contextPath().length, compactions: 0 };
}

it("P6 long conversation: 2,000 turns with threshold compaction", async ({ task }) => {
  const stub = await createBenchSession("p6_long");
  const samples = await runInDurableObject(stub, async (_instance: SessionObject, state) => {
    const engine = await openBenchEngine(state, ECHO, LIMITS);
    await engine.harness.updateSettings({ compaction: COMPACTION });
    const lane = await engine.harness.lane(BRANCH);
    const measured: TurnSample[] = [];
    let compactions = 0;
    engine.harness.events.on("compaction_end", (event) => {
      if (event.status === "completed") compactions++;
    });
    for (let turn = 1; turn <= TURNS; turn++) {
      const sample = await measureTurn(engine, lane, turn);
      measured.push({ ...sample, compactions });
      // Lets the turn's detached work (event delivery) finish outside the next turn's time.
      if (turn % 50 === 0) await settle();
    }
    return measured;
  });
  const window = (range: { from: number; to: number }) => samples.slice(range.from - 1, range.to);
  const early = window(EARLY);
  const late = window(LATE);
  const compactions = samples.at(-1)?.compactions ?? 0;
  expect(compactions).toBeGreaterThan(10);
  const stat = (rows: TurnSample[], pick: (sample: TurnSample) => number) => summarize(rows.map(pick));
  const turnEarly = stat(early, (sample) => sample.turnMs);
  const turnLate = stat(late, (sample) => sample.turnMs);
  const rowsEarly = stat(early, (sample) => sample.rowsRead);
  const rowsLate = stat(late, (sample) => sample.rowsRead);
  const readEarly = stat(early, (sample) => sample.assemblyMs);
  const readLate = stat(late, (sample) => sample.assemblyMs);
  const sizeEarly = stat(early, (sample) => sample.contextEntries);
  const sizeLate = stat(late, (sample) => sample.contextEntries);
  const what = "long conversation (2,000 turns, threshold compaction)";
  const line = (fields: Omit<BenchLine, "id" | "what">): BenchLine => ({ id: "P6", what, ...fields });
  const turnRatio = turnLate.median / turnEarly.median;
  const readRatio = readLate.median / readEarly.median;
  task.meta.benchLines = [
    line({ case: `turn cost, turns ${EARLY.from}–${EARLY.to}`, median: ms(turnEarly.median), p95: ms(turnEarly.p95), target: "—", met: undefined, samples: turnEarly.samples }),
    line({ case: `turn cost, turns ${LATE.from}–${LATE.to}`, median: ms(turnLate.median), p95: ms(turnLate.p95), target: "—", met: undefined, samples: turnLate.samples }),
    line({ case: "turn cost ratio late / early", median: ratio(turnRatio), p95: ratio(turnLate.p95 / turnEarly.p95), target: "ratio ≤ 1.5", met: turnRatio <= 1.5, samples: turnLate.samples }),
    line({ case: `SQL rows read per turn, turns ${EARLY.from}–${EARLY.to} vs ${LATE.from}–${LATE.to}`, median: `${count(rowsEarly.median)} / ${count(rowsLate.median)}`, p95: `${count(rowsEarly.p95)} / ${count(rowsLate.p95)}`, target: "—", met: undefined, samples: rowsLate.samples }),
    line({ case: `context assembly, turns ${EARLY.from}–${EARLY.to}`, median: ms(readEarly.median), p95: ms(readEarly.p95), target: "—", met: undefined, samples: readEarly.samples }),
    line({ case: `context assembly, turns ${LATE.from}–${LATE.to}`, median: ms(readLate.median), p95: ms(readLate.p95), target: "—", met: undefined, samples: readLate.samples }),
    line({ case: "context assembly ratio late / early", median: ratio(readRatio), p95: ratio(readLate.p95 / readEarly.p95), target: "ratio ≤ 1.5", met: readRatio <= 1.5, samples: readLate.samples }),
    line({ case: `context entries, turns ${EARLY.from}–${EARLY.to} vs ${LATE.from}–${LATE.to}`, median: `${count(sizeEarly.median)} / ${count(sizeLate.median)}`, p95: `${count(sizeEarly.p95)} / ${count(sizeLate.p95)}`, target: "—", met: undefined, samples: sizeLate.samples }),
  ];
  task.meta.benchNotes = [
    {
      id: "P6",
      lines: [
        `Long conversation: ${compactions} threshold compactions in ${TURNS.toLocaleString("en")} turns (${TURNS * 2 + compactions} entries on the branch); the context is bounded by the newest one.`,
      ],
    },
  ];
});
