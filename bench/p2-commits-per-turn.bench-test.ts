import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { SessionObject } from "../durable-objects/session/session-object.ts";
import type { Entry } from "../schema/entries.ts";
import { completedTurn, describeWrite, openBenchEngine, settle, type CommitRecord } from "./engine-rig.ts";
import { count, summarize, type BenchLine } from "./report.ts";
import { createBenchSession } from "./seed.ts";

// P2: storage commits per simple turn (prompt → stop, no tools). Target: ≤ 6.
//
// A real AgentHarness over the object's SQLite storage (bench/engine-rig.ts) runs TURNS prompt →
// stop turns on lane `main` with the instant `scripted/echo` model. The Storage port is decorated,
// so every Storage.commit of a turn is logged with its writes. A turn's commits are those from the
// prompt until the next prompt starts. Counts are deterministic; median and p95 show it.

const WHAT = "storage commits per simple turn (prompt → stop, no tools)";
const WARMUP_TURNS = 2;
const TURNS = 50;
const TARGET = 6;

const promptText = (turn: number): string =>
  `Turn ${turn}: please look at the next part of the repository and tell me what changed since the previous step, with a short summary.`;

interface Turn {
  commits: CommitRecord[];
  /** Write statements the host ran outside Storage.commit (the due_work schedule). */
  outsideStatements: number;
  alarmCalls: number;
}

/** The commit sequence of a turn without sizes or ids: turns of the same shape wrote the same things. */
const shapeOf = (turn: Turn): string =>
  turn.commits.map((commit) => commit.writes.map((write) => describeWrite(write).replace(/ \(\d+ B\)$/, "")).join(", ")).join(" | ");

function messageText(entry: Entry): string | undefined {
  if (entry.type !== "message") return undefined;
  const { message } = entry;
  if (message.role === "user") return typeof message.content === "string" ? message.content : undefined;
  if (message.role === "assistant") return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  return undefined;
}

it("P2 storage commits per simple turn", async ({ task }) => {
  const stub = await createBenchSession("p2");
  const { turns, transcript } = await runInDurableObject(stub, async (_instance: SessionObject, state) => {
    const engine = await openBenchEngine(state);
    const lane = await engine.harness.lane("main");
    engine.storage.take();
    engine.tap.take();
    const turns: Turn[] = [];
    for (let turn = 0; turn < WARMUP_TURNS + TURNS; turn++) {
      const alarmsBefore = engine.alarms.set + engine.alarms.deleted;
      await completedTurn(lane, promptText(turn));
      await settle();
      const commits = engine.storage.take();
      const { outside } = engine.tap.take();
      if (turn >= WARMUP_TURNS) {
        turns.push({ commits, outsideStatements: outside.statements, alarmCalls: engine.alarms.set + engine.alarms.deleted - alarmsBefore });
      }
    }
    const transcript = lane.findEntries({ order: "oldestFirst" }).map(messageText);
    return { turns, transcript };
  });

  // Correctness: every turn placed the prompt and the echoed reply, in order.
  expect(transcript).toHaveLength(2 * (WARMUP_TURNS + TURNS));
  transcript.forEach((text, index) => expect(text).toBe(promptText(Math.floor(index / 2))));

  const commits = summarize(turns.map((turn) => turn.commits.length));
  const writes = summarize(turns.map((turn) => turn.commits.reduce((sum, commit) => sum + commit.writes.length, 0)));
  const outside = summarize(turns.map((turn) => turn.outsideStatements));
  const alarms = summarize(turns.map((turn) => turn.alarmCalls));
  const shapes = new Set(turns.map(shapeOf));
  const lines: BenchLine[] = [
    {
      id: "P2",
      what: WHAT,
      case: `scripted/echo, lane main, turns ${WARMUP_TURNS + 1}–${WARMUP_TURNS + TURNS}; max ${commits.max}`,
      median: count(commits.median),
      p95: count(commits.p95),
      target: `≤ ${TARGET} (every turn)`,
      met: commits.max <= TARGET,
      samples: commits.samples,
    },
    {
      id: "P2",
      what: "writes per simple turn, over all its commits",
      case: "same turns",
      median: count(writes.median),
      p95: count(writes.p95),
      target: "—",
      met: undefined,
      samples: writes.samples,
    },
    {
      id: "P2",
      what: "host SQL writes outside Storage.commit (due_work rows)",
      case: `same turns; alarm set/delete calls: median ${count(alarms.median)}`,
      median: count(outside.median),
      p95: count(outside.p95),
      target: "—",
      met: undefined,
      samples: outside.samples,
    },
  ];
  const sample = turns[0];
  if (!sample) throw new Error("no turns");
  const breakdown = sample.commits.map(
    (commit, index) => `  ${index + 1}. ${commit.writes.length} write${commit.writes.length === 1 ? "" : "s"}: ${commit.writes.map(describeWrite).join(", ")}`,
  );
  task.meta.benchLines = lines;
  task.meta.benchNotes = [
    {
      id: "P2",
      lines: [
        `P2 breakdown of turn ${WARMUP_TURNS + 1} (${sample.commits.length} commits; payload sizes in parentheses; ${shapes.size === 1 ? "every measured turn has this shape" : `${shapes.size} different shapes among the measured turns`}):`,
        ...breakdown,
      ],
    },
  ];
});
