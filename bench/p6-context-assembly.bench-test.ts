import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { SessionObject } from "../durable-objects/session/session-object.ts";
import { branchTip } from "../harness/session/builtin-addresses.ts";
import type { Session } from "../harness/session/session.ts";
import type { Entry } from "../schema/entries.ts";
import { ms, ratio, summarize, type BenchLine } from "./report.ts";
import { BRANCH, createBenchSession, seedBranch, type Seeded, type SessionStub } from "./seed.ts";
import { appendMessages, compactWithEngine, freshSession } from "./seed-compaction.ts";

// P6: provider-context assembly with 50,000 entries on the branch and a compaction 200 entries
// back from the tip, vs a 250-entry branch with its compaction at the same distance from the tip
// (so both contexts hold the same 201 entries and only the history length differs).
// Targets: ≤ 5 ms per read, and ratio (50,000 / 250) ≤ 1.5.
//
// The compaction is a real one (bench/seed-compaction.ts): the engine's lane compacts the seeded
// history through the summary leaves, so the entry read first carries a real summary and retained
// tail; an older seeded compaction 1,000 entries further back bounds what it summarizes, as earlier
// compactions would in a long conversation.
//
// Measured inside the object (runInDurableObject), synchronously, as the engine would do it: read
// the tip, scan the branch newestFirst with stopAtType "compaction", reverse (reference §6.4 step 1).
// workerd's clock ticks in whole milliseconds, so a sample times BATCH consecutive reads and
// divides; median and p95 are over those per-read means.

const WHAT = "provider-context assembly (tip → newestFirst scan to compaction → reverse)";
const LARGE = 50_000;
const SMALL = 250;
const COMPACTION_BACK = 200;
const CONTEXT_LENGTH = COMPACTION_BACK + 1;
const BATCH = 25;
const BLOCKS = 12;
const SAMPLES_PER_BLOCK = 10;
const WARMUP_BLOCKS = 1;
/** The seeded compaction under the real one: what the real one summarizes is bounded by it. */
const EARLIER_COMPACTION_BACK = 1_000;
/** About 20 of the seeded messages stay verbatim in the real compaction's retained tail. */
const KEEP_RECENT_TOKENS = 1_000;

interface Case {
  entries: number;
  stub: SessionStub;
  seeded: Seeded;
  samples: number[];
}

/** The canonical context read (reference §1.6, §6.4 step 1). */
function assembleContext(session: Session): Entry[] {
  const tip = session.getValue(branchTip(BRANCH))?.value;
  if (tip === undefined || tip === null) throw new Error("branch main has no tip");
  return session.scanBranch({ start: tip, order: "newestFirst", stopAtType: "compaction" }).reverse();
}

/** Correctness of what was read (never of how fast). */
function check(context: readonly Entry[], seeded: Seeded): void {
  expect(context).toHaveLength(CONTEXT_LENGTH);
  expect(context[0]?.type).toBe("compaction");
  expect(context[0]?.id).toBe(seeded.compactionId);
  const compaction = context[0];
  expect(compaction?.type === "compaction" && compaction.retainedTail.length > 0 && compaction.summary.length > 0).toBe(true);
  expect(context.at(-1)?.id).toBe(seeded.tipId);
  expect(context.slice(1).every((entry) => entry.type === "message")).toBe(true);
  context.forEach((entry, index) => {
    const previous = context[index - 1];
    if (previous) expect(entry.parentId).toBe(previous.id);
  });
}

/** One block of samples inside the object; each sample is the mean of BATCH reads. */
async function measureBlock(target: Case, keep: boolean): Promise<void> {
  const samples = await runInDurableObject(target.stub, (_instance: SessionObject, state) => {
    const session = freshSession(state);
    const measured: number[] = [];
    let last: Entry[] = [];
    for (let sample = 0; sample < SAMPLES_PER_BLOCK; sample++) {
      const started = performance.now();
      for (let read = 0; read < BATCH; read++) last = assembleContext(session);
      measured.push((performance.now() - started) / BATCH);
    }
    check(last, target.seeded);
    return measured;
  });
  if (keep) target.samples.push(...samples);
}

it("P6 provider-context assembly: 50,000-entry branch vs 250-entry branch, compaction 200 back", async ({ task }) => {
  const cases: Case[] = [];
  for (const entries of [LARGE, SMALL]) {
    const stub = await createBenchSession(`p6_${entries}`);
    const history = entries - COMPACTION_BACK - 1;
    await seedBranch(stub, { entries: history, ...(history > EARLIER_COMPACTION_BACK && { compactionBack: EARLIER_COMPACTION_BACK }) });
    const compactionId = await compactWithEngine(stub, KEEP_RECENT_TOKENS);
    const seeded: Seeded = { compactionId, tipId: await appendMessages(stub, COMPACTION_BACK) };
    const first = await runInDurableObject(stub, (_instance: SessionObject, state) => assembleContext(freshSession(state)));
    check(first, seeded);
    cases.push({ entries, stub, seeded, samples: [] });
  }

  for (let block = 0; block < WARMUP_BLOCKS + BLOCKS; block++) {
    // Alternate which case goes first so drift on the machine hits both alike.
    const order = block % 2 === 0 ? cases : [...cases].reverse();
    for (const target of order) await measureBlock(target, block >= WARMUP_BLOCKS);
  }

  const [large, small] = cases.map((target) => summarize(target.samples));
  if (!large || !small) throw new Error("missing case");
  const readRatio = large.median / small.median;
  const lines: BenchLine[] = [
    {
      id: "P6",
      what: WHAT,
      case: `${LARGE.toLocaleString("en")}-entry branch, compaction ${COMPACTION_BACK} back (${CONTEXT_LENGTH} read)`,
      median: ms(large.median),
      p95: ms(large.p95),
      target: "≤ 5 ms (median)",
      met: large.median <= 5,
      samples: large.samples,
    },
    {
      id: "P6",
      what: WHAT,
      case: `${SMALL.toLocaleString("en")}-entry branch, compaction ${COMPACTION_BACK} back (${CONTEXT_LENGTH} read)`,
      median: ms(small.median),
      p95: ms(small.p95),
      target: "—",
      met: undefined,
      samples: small.samples,
    },
    {
      id: "P6",
      what: WHAT,
      case: `ratio ${LARGE.toLocaleString("en")} / ${SMALL} (median col: medians; p95 col: p95s)`,
      median: ratio(readRatio),
      p95: ratio(large.p95 / small.p95),
      target: "ratio ≤ 1.5",
      met: readRatio <= 1.5,
      samples: Math.min(large.samples, small.samples),
    },
  ];
  task.meta.benchLines = lines;
});
