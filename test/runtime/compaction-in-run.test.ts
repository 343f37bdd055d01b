import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { checkInvariants } from "./invariants.ts";
import { crashAt, leafOf, never, settledRecord, stepsTaken, until } from "./crash-rig.ts";
import { foldAndCapture, openWatched } from "./watch-fold.ts";
import { deferred, runRecord, unwrap } from "./drive-helpers.ts";
import { leftoverOperationValues, SCRIPT, types } from "./helpers.ts";
import { compactionsOf, requestTexts, withCompactionRig } from "./compaction-helpers.ts";
import { testTools } from "./tool-helpers.ts";

// In-run compaction (reference §3.4 `resume_checkpoint`, §3.5 item 2, §3.6 step 1, §6.1): the
// boundary's threshold probe against the scripted models' 128,000-token window, and overflow
// compaction from the response classification. The scripted steps report their usage, so the
// threshold is crossed exactly where a step says.

/** Compact when the context passes 50 tokens; keep the last two one-token messages. */
const THRESHOLD: HarnessSettingsPatch = {
  compaction: { enabled: true, reserveTokens: 128_000 - 50, keepRecentTokens: 2 },
  retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 },
};
const NO_RETRY: HarnessSettingsPatch = { ...THRESHOLD, retry: { enabled: false, maxRetries: 0, baseDelayMs: 0 } };
const small = (text: string): ScriptStep => ({ text, usage: { input: 10, output: 1 } });
const big = (text: string): ScriptStep => ({ text, usage: { input: 100, output: 1 } });

const compactionEvents = (events: readonly HarnessEvent[]) => events.filter((event) => event.type === "compaction_start" || event.type === "compaction_end");

async function converse(lane: AgentLane): Promise<void> {
  unwrap(await lane.prompt("one"));
}

describe("threshold compaction at the boundary", () => {
  it("a final answer past the threshold compacts before the run ends: one entry on the tip, the segment inside the run", async () => {
    const result = await withCompactionRig(
      async ({ lane, session, events, requests }) => {
        await converse(lane);
        events.length = 0;
        requests.length = 0;
        const record = runRecord(await lane.prompt("two"));
        const entries = compactionsOf(lane);
        requests.length = 0;
        runRecord(await lane.prompt("three"));
        return { record, entries, events, next: requestTexts(requests[0]), leftovers: leftoverOperationValues(session, record.operationId), violations: checkInvariants(session) };
      },
      { model: SCRIPT, steps: [small("a"), big("b"), { text: "SUMMARY" }, small("c")], settings: THRESHOLD },
    );
    expect(result.record).toMatchObject({ kind: "run", status: "completed", tipId: result.entries[0]?.id });
    expect(result.entries).toHaveLength(1);
    expect(result.entries[0]).toMatchObject({ summary: "SUMMARY", fromHook: false });
    expect(result.entries[0]?.retainedTail.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(compactionEvents(result.events)).toMatchObject([
      { type: "compaction_start", reason: "threshold", runId: result.record.operationId },
      { type: "compaction_end", reason: "threshold", status: "completed", entryId: result.entries[0]?.id },
    ]);
    const kinds = types(result.events);
    expect(kinds.indexOf("compaction_end")).toBeLessThan(kinds.indexOf("run_end"));
    // The next run's context starts with the summary, then the kept turn.
    expect(result.next[0]).toContain("SUMMARY");
    expect(result.next.slice(1)).toEqual(["two", "b", "three"]);
    expect(result.leftovers).toEqual([]);
    expect(result.violations).toEqual([]);
  });

  it("a run that starts past the threshold compacts first, then asks the model with the summarized context", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, requests }) => {
        await harness.updateSettings({ compaction: { enabled: false, reserveTokens: 128_000 - 50, keepRecentTokens: 2 } });
        unwrap(await lane.prompt("one"));
        await harness.updateSettings(THRESHOLD);
        requests.length = 0;
        const record = runRecord(await lane.prompt("two"));
        return { record, entries: compactionsOf(lane), texts: requests.map(requestTexts), systems: requests.map((request) => request.context.systemPrompt ?? "") };
      },
      { model: SCRIPT, steps: [big("a"), { text: "SUMMARY" }, small("b")], settings: THRESHOLD },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toHaveLength(1);
    expect(result.systems[0]).toContain("summarization");
    // The prompt is the newest message: it stays in the retained tail after the summary.
    expect(result.texts[1]?.[0]).toContain("SUMMARY");
    expect(result.texts[1]?.slice(1)).toEqual(["a", "two"]);
  });

  it("after tools (need_assistant) the compaction resumes the turn: the model answers the tool result after the summary", async () => {
    const result = await withCompactionRig(
      async ({ lane, requests }) => {
        await converse(lane);
        unwrap(await lane.setActiveTools(["probe"]));
        requests.length = 0;
        const record = runRecord(await lane.prompt("two"));
        return { record, entries: compactionsOf(lane), texts: requests.map(requestTexts) };
      },
      {
        model: SCRIPT,
        steps: [small("a"), { toolCalls: [{ name: "probe", arguments: {} }], usage: { input: 100, output: 1 } }, { text: "SUMMARY" }, small("done")],
        // Keep the tool exchange and its prompt: the cut lands on "two", no split turn.
        settings: { ...THRESHOLD, compaction: { enabled: true, reserveTokens: 128_000 - 50, keepRecentTokens: 5 } },
        tools: testTools({ probe: { run: async () => ({ content: [{ type: "text", text: "probed" }], isError: false }) } }),
      },
    );
    expect(result.record.error).toBeUndefined();
    expect(result.record.status).toBe("completed");
    expect(result.entries).toHaveLength(1);
    expect(result.texts).toHaveLength(3);
    expect(result.texts[2]?.[0]).toContain("SUMMARY");
    expect(result.texts[2]?.at(-1)).toBe("probed");
  });

  it("stays quiet below the threshold and when compaction is disabled", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, events }) => {
        await converse(lane);
        await harness.updateSettings({ compaction: { enabled: false, reserveTokens: 128_000 - 50, keepRecentTokens: 2 } });
        runRecord(await lane.prompt("two"));
        return { entries: compactionsOf(lane), events: compactionEvents(events) };
      },
      { model: SCRIPT, steps: [small("a"), big("b")], settings: THRESHOLD },
    );
    expect(result.entries).toEqual([]);
    expect(result.events).toEqual([]);
  });

  it("before_compaction's result is used as-is (fromHook) and its usage row lands with the entry", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, usageRows }) => {
        await converse(lane);
        harness.hooks.on("before_compaction", (event) => ({
          compaction: { summary: `hooked ${event.reason}`, tokensBefore: 7, retainedTail: [], usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 3, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } } },
        }));
        const rows = usageRows().length;
        const record = runRecord(await lane.prompt("two"));
        return { record, entries: compactionsOf(lane), rows: usageRows().length - rows };
      },
      { model: SCRIPT, steps: [small("a"), big("b")], settings: THRESHOLD },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toMatchObject([{ summary: "hooked threshold", fromHook: true, tokensBefore: 7 }]);
    expect(result.rows).toBe(2);
  });

  it("a threshold decline keeps the run going: no entry, the run completes, and with before_run_end the boundary does not loop", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, events }) => {
        await converse(lane);
        let asked = 0;
        let ends = 0;
        harness.hooks.on("before_compaction", () => {
          asked++;
          return { decline: true };
        });
        harness.hooks.on("before_run_end", () => {
          ends++;
          return {};
        });
        events.length = 0;
        const record = runRecord(await lane.prompt("two"));
        return { record, asked, ends, entries: compactionsOf(lane), events: compactionEvents(events) };
      },
      { model: SCRIPT, steps: [small("a"), big("b")], settings: THRESHOLD },
    );
    expect(result.record.status).toBe("completed");
    expect(result.asked).toBe(1);
    expect(result.ends).toBe(1);
    expect(result.entries).toEqual([]);
    expect(result.events).toMatchObject([{ type: "compaction_start" }, { type: "compaction_end", status: "declined" }]);
  });

  it("a queued follow-up is placed by the publication after a decline (the threshold is off there) and answered", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness }) => {
        await converse(lane);
        const gate = deferred();
        harness.hooks.on("before_compaction", async () => {
          await gate.promise;
          return { decline: true };
        });
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "two" }));
        const driven = lane.drive({ operationId, waitForRetry: true });
        await until(() => leafOf(lane) === "summary.deciding", "the threshold compaction");
        unwrap(await lane.followUp("and then?"));
        gate.resolve();
        const record = settledRecord(await driven);
        return { record, inbox: lane.state.inbox.length, transcript: lane.findEntries({ order: "oldestFirst" }).map((entry) => (entry.type === "message" ? entry.message.role : entry.type)) };
      },
      { model: SCRIPT, steps: [small("a"), big("b"), small("answered")], settings: THRESHOLD },
    );
    expect(result.record.status).toBe("completed");
    expect(result.inbox).toBe(0);
    expect(result.transcript).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
  });

  it("a steer arriving mid-compaction is placed in the publication commit, after the entry, and triggers the next request", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, requests, session }) => {
        await converse(lane);
        const gate = deferred();
        harness.hooks.on("before_compaction", async () => {
          await gate.promise;
          return {};
        });
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "two" }));
        const driven = lane.drive({ operationId, waitForRetry: true });
        await until(() => leafOf(lane) === "summary.deciding", "the threshold compaction");
        const { entryId } = unwrap(await lane.steer("steer now"));
        requests.length = 0;
        gate.resolve();
        const record = settledRecord(await driven);
        const [entry] = compactionsOf(lane);
        const steer = session.getEntries([entryId]).get(entryId);
        return { record, entry, steer, texts: requests.map(requestTexts), violations: checkInvariants(session) };
      },
      { model: SCRIPT, steps: [small("a"), big("b"), { text: "SUMMARY" }, small("steered")], settings: THRESHOLD },
    );
    expect(result.record.status).toBe("completed");
    expect(result.steer?.parentId).toBe(result.entry?.id);
    // The same commit: the steer's seq follows the entry's directly.
    expect(result.steer?.seq).toBe((result.entry?.seq ?? 0) + 1);
    expect(result.texts[1]?.[0]).toContain("SUMMARY");
    expect(result.texts[1]?.at(-1)).toBe("steer now");
    expect(result.violations).toEqual([]);
  });

  it("a failed summary ends the segment and fails the run; queued input stays queued", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, events }) => {
        await converse(lane);
        const gate = deferred();
        harness.hooks.on("before_compaction", async () => {
          await gate.promise;
          return {};
        });
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "two" }));
        const driven = lane.drive({ operationId, waitForRetry: true });
        await until(() => leafOf(lane) === "summary.deciding", "the threshold compaction");
        unwrap(await lane.steer("kept"));
        events.length = 0;
        gate.resolve();
        const record = settledRecord(await driven);
        return { record, inbox: lane.state.inbox.map((item) => item.kind), entries: compactionsOf(lane), events: types(events), end: compactionEvents(events) };
      },
      { model: SCRIPT, steps: [small("a"), big("b"), { error: "no summary today" }], settings: NO_RETRY },
    );
    expect(result.record).toMatchObject({ status: "failed", error: { code: "summary_error" } });
    expect(result.inbox).toEqual(["steer"]);
    expect(result.entries).toEqual([]);
    expect(result.end).toMatchObject([{ type: "compaction_end", status: "failed", error: { code: "summary_error" } }]);
    expect(result.events.slice(-2)).toEqual(["compaction_end", "run_end"]);
  });

  it("a summary model that disappears fails the run model_unavailable", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, models }) => {
        await converse(lane);
        harness.hooks.on("before_compaction", () => {
          models.missing = true;
          return {};
        });
        return runRecord(await lane.prompt("two"));
      },
      { model: SCRIPT, steps: [small("a"), big("b")], settings: THRESHOLD },
    );
    expect(result).toMatchObject({ status: "failed", error: { code: "model_unavailable" } });
  });

  it("an abort inside the compaction ends the segment aborted, then the run; nothing is placed", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, events, session }) => {
        await converse(lane);
        // A hook that honours its signal: the abort ends it.
        harness.hooks.on("before_compaction", (_event, { signal }) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason))));
        const tip = lane.getTipId();
        const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "two" }));
        const driven = lane.drive({ operationId });
        await until(() => leafOf(lane) === "summary.deciding", "the threshold compaction");
        events.length = 0;
        unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await driven);
        return { record, tip, entries: compactionsOf(lane), events: types(events).filter((type) => type === "compaction_end" || type === "run_end"), end: compactionEvents(events), leftovers: leftoverOperationValues(session, operationId) };
      },
      { model: SCRIPT, steps: [small("a"), big("b")], settings: THRESHOLD },
    );
    expect(result.record.status).toBe("aborted");
    expect(result.entries).toEqual([]);
    expect(result.events).toEqual(["compaction_end", "run_end"]);
    expect(result.end).toMatchObject([{ reason: "threshold", status: "aborted" }]);
    expect(result.leftovers).toEqual([]);
  });

  it("a watcher's fold across the in-run segment equals a fresh snapshot", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness }) => {
        await converse(lane);
        const watched = await openWatched(lane);
        runRecord(await lane.prompt("two"));
        return foldAndCapture(harness, lane, watched);
      },
      { model: SCRIPT, steps: [small("a"), big("b"), { text: "SUMMARY" }], settings: THRESHOLD },
    );
    expect(result.folded).toEqual(result.fresh);
  });
});

describe("overflow compaction", () => {
  it("an overflow compacts once and the turn is asked again with the summarized context", async () => {
    const result = await withCompactionRig(
      async ({ lane, events, requests, session }) => {
        await converse(lane);
        unwrap(await lane.prompt("two"));
        events.length = 0;
        requests.length = 0;
        const record = runRecord(await lane.prompt("three"));
        return { record, entries: compactionsOf(lane), end: compactionEvents(events), texts: requests.map(requestTexts), violations: checkInvariants(session) };
      },
      { model: SCRIPT, steps: [small("a"), small("b"), { overflow: true }, { text: "SUMMARY" }, small("c")], settings: { ...THRESHOLD, compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } } },
    );
    expect(result.record.status).toBe("completed");
    expect(result.entries).toHaveLength(1);
    expect(result.end).toMatchObject([
      { type: "compaction_start", reason: "overflow" },
      { type: "compaction_end", reason: "overflow", status: "completed" },
    ]);
    expect(result.texts).toHaveLength(3);
    expect(result.texts[2]?.[0]).toContain("SUMMARY");
    // The failed response stays in history but never reaches the model again.
    expect(result.texts[2]?.at(-1)).toBe("three");
    expect(result.violations).toEqual([]);
  });

  it("a second overflow in the same cycle fails the run context_overflow (one compaction only)", async () => {
    const result = await withCompactionRig(
      async ({ lane }) => {
        await converse(lane);
        unwrap(await lane.prompt("two"));
        const record = runRecord(await lane.prompt("three"));
        return { record, entries: compactionsOf(lane) };
      },
      { model: SCRIPT, steps: [small("a"), small("b"), { overflow: true }, { text: "SUMMARY" }, { overflow: true }], settings: { ...THRESHOLD, compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } } },
    );
    expect(result.record).toMatchObject({ status: "failed", error: { code: "context_overflow" } });
    expect(result.entries).toHaveLength(1);
  });

  it("with compaction disabled an overflow fails the run at once", async () => {
    const result = await withCompactionRig(
      async ({ lane }) => {
        await converse(lane);
        const record = runRecord(await lane.prompt("two"));
        return { record, entries: compactionsOf(lane) };
      },
      { model: SCRIPT, steps: [small("a"), { overflow: true }], settings: { ...THRESHOLD, compaction: { enabled: false, reserveTokens: 4000, keepRecentTokens: 2 } } },
    );
    expect(result.record).toMatchObject({ status: "failed", error: { code: "context_overflow" } });
    expect(result.entries).toEqual([]);
  });

  it("a declined overflow compaction fails the run compaction_declined", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, events }) => {
        await converse(lane);
        harness.hooks.on("before_compaction", () => ({ decline: true }));
        events.length = 0;
        const record = runRecord(await lane.prompt("two"));
        return { record, end: compactionEvents(events) };
      },
      { model: SCRIPT, steps: [small("a"), { overflow: true }], settings: { ...THRESHOLD, compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } } },
    );
    expect(result.record).toMatchObject({ status: "failed", error: { code: "compaction_declined" } });
    expect(result.end).toMatchObject([{ type: "compaction_start" }, { type: "compaction_end", status: "declined" }]);
  });
});

describe("in-run compaction across a kill", () => {
  it("killed after the compaction committed (parked in before_run_end): the recency guard allows no second compaction", async () => {
    let ends = 0;
    let armed = false;
    const crashed = await crashAt({
      steps: [small("a"), big("b"), { text: "SUMMARY" }, { text: "NEVER" }],
      settings: THRESHOLD,
      accept: async (_rig, lane) => {
        await converse(lane);
        armed = true;
        return unwrap(await lane.accept({ kind: "prompt", prompt: "two" })).operationId;
      },
      park: ({ harness }) => {
        let entered = false;
        harness.hooks.on("before_run_end", () => {
          if (!armed) return {};
          entered = true;
          return never();
        });
        return () => entered;
      },
      reopen: ({ harness }) => {
        harness.hooks.on("before_run_end", () => {
          ends++;
          return {};
        });
      },
    });
    expect(crashed.parked).toMatchObject({ at: "checkpoint", continuation: { kind: "may_finish" } });
    expect(crashed.stepsAtKill).toBe(3);
    expect(ends).toBe(1);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.stepsAfter).toBe(3);
    expect(crashed.transcript.filter((entry) => entry.type === "compaction")).toHaveLength(1);
    expect(crashed.violations).toEqual([]);
  });

  it("killed inside the threshold compaction's request: the attempt is retried and the run completes with one entry", async () => {
    const crashed = await crashAt({
      steps: [small("a"), big("b"), { text: "LOST", delayMs: 600_000 }, { text: "SUMMARY" }],
      settings: THRESHOLD,
      accept: async (_rig, lane) => {
        await converse(lane);
        return unwrap(await lane.accept({ kind: "prompt", prompt: "two" })).operationId;
      },
      park: ({ session }, lane) => () => leafOf(lane) === "summary.effect_pending" && stepsTaken(session) === 3,
    });
    expect(crashed.restored).toMatchObject({ at: "summary.effect_pending", task: { reason: "threshold", boundary: { kind: "resume_checkpoint" } } });
    expect(settledRecord(crashed.driven)).toMatchObject({ kind: "run", status: "completed" });
    expect(crashed.transcript.filter((entry) => entry.type === "compaction").map((entry) => (entry.type === "compaction" ? entry.summary : ""))).toEqual(["SUMMARY"]);
    expect(crashed.events.filter((event) => event.type === "compaction_end")).toMatchObject([{ reason: "threshold", status: "completed" }]);
    expect(crashed.violations).toEqual([]);
  });
});
