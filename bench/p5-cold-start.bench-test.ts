import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { SessionInfo, SessionObject } from "../durable-objects/session/session-object.ts";
import type { Entry } from "../schema/entries.ts";
import { ms, ratio, summarize, type BenchLine, type Summary } from "./report.ts";
import { BRANCH, createBenchSession, seedBranch, unwrap, type SessionStub } from "./seed.ts";

// P5: cold start (evicted object, first request) with 100 vs 100,000 entries in history.
// Target: ratio of medians ≤ 1.5 — restore reads no history.
//
// workerd's clock ticks in whole milliseconds, so one cold request (a few ms) cannot be timed
// alone with useful precision. Each case therefore has COPIES identical objects: a sample evicts
// all of them (untimed), then times one first request against each in turn and divides by COPIES.

const WHAT = "cold start: evicted object, first request (info + 50-entry branch read)";
const SMALL = 100;
const LARGE = 100_000;
const COPIES = 6;
const WARMUP_ROUNDS = 2;
const ROUNDS = 50;
const READ_LIMIT = 50;

interface Target {
  stub: SessionStub;
  tipId: string;
}

interface Case {
  entries: number;
  targets: Target[];
  cold: number[];
  warm: number[];
}

/** Instances seen by runInDurableObject: a new object identity proves the eviction took effect. */
const seenInstances = new WeakSet<SessionObject>();

async function isFreshInstance(stub: SessionStub): Promise<boolean> {
  return runInDurableObject(stub, (instance: SessionObject) => {
    const fresh = !seenInstances.has(instance);
    seenInstances.add(instance);
    return fresh;
  });
}

/** Evicts the object; one that already went idle on its own is woken first so eviction can apply. */
async function evict(stub: SessionStub): Promise<void> {
  try {
    await evictDurableObject(stub);
  } catch {
    unwrap(await stub.stats());
    await evictDurableObject(stub);
  }
}

interface Reply {
  info: SessionInfo;
  scan: Entry[];
}

/**
 * The timed request against every copy: what a caller does first on a session — describe it, then
 * read the newest entries of its branch. Returns the mean time per object.
 */
async function firstRequests(target: Case): Promise<{ perObject: number; replies: Reply[] }> {
  const replies: Reply[] = [];
  const started = performance.now();
  for (const { stub } of target.targets) {
    const info = unwrap(await stub.info());
    const scan = unwrap(await stub.scanBranch(BRANCH, { limit: READ_LIMIT }));
    replies.push({ info, scan });
  }
  const perObject = (performance.now() - started) / target.targets.length;
  return { perObject, replies };
}

/** Correctness of what was read (never of how fast). */
function check(target: Case, replies: readonly Reply[]): void {
  expect(replies).toHaveLength(target.targets.length);
  replies.forEach(({ info, scan }, index) => {
    const tipId = target.targets[index]?.tipId;
    expect(info.stats.messageCount).toBe(target.entries);
    expect(info.branches).toEqual([{ name: BRANCH, tipId }]);
    expect(scan).toHaveLength(READ_LIMIT);
    expect(scan[0]?.id).toBe(tipId);
    scan.forEach((entry, position) => {
      const older = scan[position + 1];
      if (older) expect(entry.parentId).toBe(older.id);
    });
  });
}

it("P5 cold start with 100 vs 100,000 entries", async ({ task }) => {
  const cases: Case[] = [];
  for (const entries of [SMALL, LARGE]) {
    const targets: Target[] = [];
    const seedStarted = performance.now();
    for (let copy = 0; copy < COPIES; copy++) {
      const stub = await createBenchSession(`p5_${entries}`);
      const { tipId } = await seedBranch(stub, { entries });
      targets.push({ stub, tipId });
    }
    console.log(`P5: seeded ${COPIES} objects × ${entries} entries in ${ms(performance.now() - seedStarted)}`);
    cases.push({ entries, targets, cold: [], warm: [] });
  }

  // Eviction really replaces the instance: the next request meets a new object.
  for (const { targets } of cases) {
    const probe = targets[0];
    if (!probe) throw new Error("no copies");
    await isFreshInstance(probe.stub);
    await evict(probe.stub);
    expect(await isFreshInstance(probe.stub)).toBe(true);
  }

  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    // Alternate which case goes first so drift on the machine hits both alike.
    const order = round % 2 === 0 ? cases : [...cases].reverse();
    for (const target of order) {
      for (const { stub } of target.targets) await evict(stub);
      const cold = await firstRequests(target);
      const warm = await firstRequests(target);
      check(target, cold.replies);
      check(target, warm.replies);
      if (round >= WARMUP_ROUNDS) {
        target.cold.push(cold.perObject);
        target.warm.push(warm.perObject);
      }
    }
  }

  const [small, large] = cases.map((target) => ({ cold: summarize(target.cold), warm: summarize(target.warm) }));
  if (!small || !large) throw new Error("missing case");
  const coldRatio = large.cold.median / small.cold.median;
  const line = (label: string, summary: Summary): BenchLine => ({
    id: "P5",
    what: WHAT,
    case: label,
    median: ms(summary.median),
    p95: ms(summary.p95),
    target: "—",
    met: undefined,
    samples: summary.samples,
  });
  task.meta.benchLines = [
    line(`cold, ${SMALL.toLocaleString("en")} entries`, small.cold),
    line(`cold, ${LARGE.toLocaleString("en")} entries`, large.cold),
    {
      id: "P5",
      what: WHAT,
      case: "ratio 100,000 / 100 (median col: medians; p95 col: p95s)",
      median: ratio(coldRatio),
      p95: ratio(large.cold.p95 / small.cold.p95),
      target: "ratio ≤ 1.5",
      met: coldRatio <= 1.5,
      samples: ROUNDS,
    },
    line(`reference, same request warm, ${SMALL.toLocaleString("en")} entries`, small.warm),
    line(`reference, same request warm, ${LARGE.toLocaleString("en")} entries`, large.warm),
  ];
});
