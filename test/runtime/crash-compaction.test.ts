import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { CompactionEntry } from "../../schema/entries.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { TURN_PREFIX_HEADING } from "../../harness/compaction/summarizer.ts";
import { crashAt, leafOf, never, parkInHook, settledRecord, stepsTaken, until, type Attached } from "./crash-rig.ts";
import { unwrap } from "./drive-helpers.ts";
import { leftoverOperationValues, SCRIPT } from "./helpers.ts";
import { compactionsOf, withCompactionRig } from "./compaction-helpers.ts";

// Crash recovery and abort for the summary leaves (reference §4.5, §4.6): a compaction parked at
// each leaf, every object killed, a fresh object drives the same id; and an abort at each leaf
// ends the compaction aborted with nothing placed.

/** Keeps the last user turn (two one-token messages): one history request, no split. */
const KEEP_LAST_TURN: HarnessSettingsPatch = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 }, retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 } };
/** Keeps only the last assistant: the last turn is split, two nested requests. */
const SPLIT_LAST_TURN: HarnessSettingsPatch = { ...KEEP_LAST_TURN, compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 1 } };

async function converseThenCompact(_rig: Attached, lane: AgentLane): Promise<string> {
  unwrap(await lane.prompt("one"));
  unwrap(await lane.prompt("two"));
  return unwrap(await lane.accept({ kind: "compaction" })).operationId;
}

/** Parks the first pass in `before_request` of a compaction request (the runs before it pass through). */
function parkInSummaryRequest({ harness }: Attached): () => boolean {
  let entered = false;
  harness.hooks.on("before_request", (event) => {
    if (event.step !== "compaction") return {};
    entered = true;
    return never();
  });
  return () => entered;
}

const compactionIn = (transcript: readonly { type: string }[]): CompactionEntry[] => transcript.filter((entry): entry is CompactionEntry => entry.type === "compaction");

describe("crash at summary leaves", () => {
  it("summary.deciding: before_compaction reruns after the kill and the compaction completes once", async () => {
    let reran = 0;
    const crashed = await crashAt({
      steps: [{ text: "a" }, { text: "b" }, { text: "SUMMARY" }],
      settings: KEEP_LAST_TURN,
      accept: converseThenCompact,
      park: parkInHook("before_compaction"),
      reopen: ({ harness }) => {
        harness.hooks.on("before_compaction", () => {
          reran++;
          return {};
        });
      },
    });
    expect(crashed.parked?.at).toBe("summary.deciding");
    expect(crashed.restored).toEqual(crashed.parked);
    expect(crashed.open).toMatchObject([{ kind: "compaction", operationId: crashed.operationId }]);
    expect(reran).toBe(1);
    expect(settledRecord(crashed.driven)).toMatchObject({ kind: "compaction", status: "completed" });
    expect(compactionIn(crashed.transcript).map((entry) => entry.summary)).toEqual(["SUMMARY"]);
    expect(crashed.idle).toBe(true);
    expect(crashed.violations).toEqual([]);
  });

  it("summary.ready: a new attempt after the kill (the parked request was never admitted)", async () => {
    const crashed = await crashAt({
      steps: [{ text: "a" }, { text: "b" }, { text: "SUMMARY" }],
      settings: KEEP_LAST_TURN,
      accept: converseThenCompact,
      park: parkInSummaryRequest,
    });
    expect(crashed.parked).toMatchObject({ at: "summary.ready", nextAttempt: 1 });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(crashed.stepsAtKill).toBe(2);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.stepsAfter).toBe(3);
    expect(compactionIn(crashed.transcript).map((entry) => entry.summary)).toEqual(["SUMMARY"]);
    expect(crashed.violations).toEqual([]);
  });

  it("summary.effect_pending with attempts left: the unknown attempt waits as a recovery retry, then succeeds", async () => {
    const crashed = await crashAt({
      steps: [{ text: "a" }, { text: "b" }, { text: "LOST", delayMs: 600_000 }, { text: "SUMMARY" }],
      settings: KEEP_LAST_TURN,
      accept: converseThenCompact,
      park: ({ session }, lane) => () => leafOf(lane) === "summary.effect_pending" && stepsTaken(session) === 3,
    });
    expect(crashed.parked).toMatchObject({ at: "summary.effect_pending", attempt: 1, request: { index: 0 } });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(crashed.events.find((event) => event.type === "retry_scheduled")).toMatchObject({ step: "compaction", attempt: 2, recovery: true });
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(compactionIn(crashed.transcript).map((entry) => entry.summary)).toEqual(["SUMMARY"]);
    // Two conversation rows and the successful request's; nothing is fabricated for the lost one.
    expect(crashed.usageRows).toBe(3);
    expect(crashed.violations).toEqual([]);
  });

  it("summary.effect_pending with no attempt left: the compaction fails structural_interrupted and places nothing", async () => {
    const crashed = await crashAt({
      steps: [{ text: "a" }, { text: "b" }, { text: "LOST", delayMs: 600_000 }],
      settings: { ...KEEP_LAST_TURN, retry: { enabled: false, maxRetries: 0, baseDelayMs: 0 } },
      accept: converseThenCompact,
      park: ({ session }, lane) => () => leafOf(lane) === "summary.effect_pending" && stepsTaken(session) === 3,
    });
    expect(settledRecord(crashed.driven)).toMatchObject({ status: "failed", error: { code: "structural_interrupted" } });
    expect(compactionIn(crashed.transcript)).toEqual([]);
    expect(crashed.idle).toBe(true);
    expect(crashed.violations).toEqual([]);
  });

  it("a split turn killed in its second request: the committed first usage row remains, the whole attempt reruns", async () => {
    const crashed = await crashAt({
      steps: [{ text: "a" }, { text: "b" }, { text: "H1" }, { text: "P1", delayMs: 600_000 }, { text: "H2" }, { text: "P2" }],
      settings: SPLIT_LAST_TURN,
      accept: converseThenCompact,
      park: ({ session }, lane) => () => leafOf(lane) === "summary.effect_pending" && stepsTaken(session) === 4,
    });
    expect(crashed.parked).toMatchObject({ at: "summary.effect_pending", request: { index: 1 } });
    expect(crashed.restored).toMatchObject({ at: "summary.effect_pending", request: { index: 1 } });
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(compactionIn(crashed.transcript).map((entry) => entry.summary)).toEqual([`H2${TURN_PREFIX_HEADING}P2`]);
    // a, b, H1 (committed before the kill), then H2 and P2.
    expect(crashed.usageRows).toBe(5);
    expect(crashed.violations).toEqual([]);
  });

  it("summary.retry_wait: the wait survives the kill and the next attempt succeeds", async () => {
    const crashed = await crashAt({
      steps: [{ text: "a" }, { text: "b" }, { error: "flaky", retryable: true }, { text: "SUMMARY" }],
      settings: { ...KEEP_LAST_TURN, retry: { enabled: true, maxRetries: 2, baseDelayMs: 60_000 } },
      accept: converseThenCompact,
      park: (_rig, lane) => () => leafOf(lane) === "summary.retry_wait",
      clock: () => Date.now() + 120_000,
    });
    expect(crashed.restored).toMatchObject({ at: "summary.retry_wait", nextAttempt: 2 });
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(compactionIn(crashed.transcript).map((entry) => entry.summary)).toEqual(["SUMMARY"]);
    expect(crashed.violations).toEqual([]);
  });
});

describe("abort at summary leaves", () => {
  const settings = { ...KEEP_LAST_TURN, retry: { enabled: true, maxRetries: 2, baseDelayMs: 60_000 } };

  async function abortAt(
    steps: { text?: string; error?: string; retryable?: boolean; delayMs?: number }[],
    arrange: (lane: AgentLane, operationId: string, harness: Attached["harness"]) => Promise<void>,
  ) {
    return withCompactionRig(
      async ({ lane, harness, session, events, usageRows }) => {
        unwrap(await lane.prompt("one"));
        unwrap(await lane.prompt("two"));
        const tip = lane.getTipId();
        const rows = usageRows().length;
        const { operationId } = unwrap(await lane.accept({ kind: "compaction" }));
        await arrange(lane, operationId, harness);
        const record = settledRecord(await lane.drive({ operationId }));
        return {
          record,
          tip,
          after: lane.getTipId(),
          compactions: compactionsOf(lane).length,
          rows: usageRows().length - rows,
          end: events.filter((event) => event.type === "compaction_end"),
          leftovers: leftoverOperationValues(session, operationId),
        };
      },
      { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }, ...steps.map((step) => (step.error !== undefined ? { error: step.error, retryable: step.retryable ?? false } : { text: step.text ?? "", ...(step.delayMs !== undefined && { delayMs: step.delayMs }) }))], settings },
    );
  }

  const expectAborted = (result: Awaited<ReturnType<typeof abortAt>>) => {
    expect(result.record).toMatchObject({ kind: "compaction", status: "aborted", tipId: result.tip });
    expect(result.after).toBe(result.tip);
    expect(result.compactions).toBe(0);
    expect(result.end).toMatchObject([{ reason: "manual", status: "aborted" }]);
    expect(result.leftovers).toEqual([]);
  };

  it("at summary.deciding", async () => {
    const result = await abortAt([{ text: "SUMMARY" }], async (lane, operationId) => {
      unwrap(await lane.requestAbort(operationId));
    });
    expectAborted(result);
    expect(result.rows).toBe(0);
  });

  it("at summary.ready (inside before_request)", async () => {
    const result = await abortAt([{ text: "SUMMARY" }], async (lane, operationId, harness) => {
      harness.hooks.on("before_request", async () => {
        unwrap(await lane.requestAbort(operationId));
        return {};
      });
    });
    expectAborted(result);
    expect(result.rows).toBe(0);
  });

  it("at summary.effect_pending (the request is cancelled; its usage row is settled)", async () => {
    const result = await abortAt([{ text: "SLOW", delayMs: 600_000 }], async (lane, operationId) => {
      const driven = lane.drive({ operationId });
      await until(() => leafOf(lane) === "summary.effect_pending", "the summary request");
      unwrap(await lane.requestAbort(operationId));
      await driven;
    });
    expectAborted(result);
    expect(result.rows).toBe(1);
  });

  it("at summary.retry_wait", async () => {
    const result = await abortAt([{ error: "flaky", retryable: true }], async (lane, operationId) => {
      const waiting = unwrap(await lane.drive({ operationId }));
      if (waiting.kind !== "waiting") throw new Error("expected the retry wait");
      unwrap(await lane.requestAbort(operationId));
    });
    expectAborted(result);
    expect(result.rows).toBe(1);
  });
});
