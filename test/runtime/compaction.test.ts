import { describe, expect, it } from "vitest";
import { TURN_PREFIX_HEADING } from "../../harness/compaction/summarizer.ts";
import { readOperation } from "../../harness/runtime/operation-codec.ts";
import { operationPreparation } from "../../harness/session/builtin-addresses.ts";
import { checkInvariants } from "./invariants.ts";
import { foldAndCapture, openWatched } from "./watch-fold.ts";
import { leftoverOperationValues, SCRIPT, types } from "./helpers.ts";
import { settledRecord, unwrap } from "./drive-helpers.ts";
import { COMPACT_EAGERLY, compactionsOf, requestTexts, withCompactionRig } from "./compaction-helpers.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";

// Manual compaction (reference §3.1 acceptance, §3.3–3.4 summary leaves and the `finish` boundary,
// §6): acceptance prepares and opens `summary.deciding`; the drive asks before_compaction, then the
// model (fresh request identity, no cache), and places one compaction entry on the tip.

const ten = "x".repeat(40);

describe("compaction acceptance", () => {
  it("refuses with NothingToCompact when the context fits in the kept part (or the lane is empty), writing nothing", async () => {
    const result = await withCompactionRig(async ({ lane, session, events }) => {
      const empty = await lane.accept({ kind: "compaction" });
      unwrap(await lane.prompt("short"));
      const before = session.findEntries({ order: "asc" }).length;
      events.length = 0;
      const fits = await lane.accept({ kind: "compaction" });
      return { empty, fits, entries: session.findEntries({ order: "asc" }).length - before, events: types(events), open: lane.state.operation, violations: checkInvariants(session) };
    });
    expect(result.empty).toEqual({ ok: false, error: { code: "NothingToCompact", lane: "main", estimatedTokens: 0, keepRecentTokens: expect.any(Number) } });
    expect(result.fits).toMatchObject({ ok: false, error: { code: "NothingToCompact", lane: "main" } });
    // Why, in the user's terms: the context's estimate against the recent part a compaction keeps.
    const fits = result.fits.ok ? undefined : result.fits.error;
    if (fits?.code !== "NothingToCompact") throw new Error("expected NothingToCompact");
    expect(fits.estimatedTokens).toBeGreaterThan(0);
    expect(fits.estimatedTokens).toBeLessThan(fits.keepRecentTokens);
    expect(result).toMatchObject({ entries: 0, events: [], open: null, violations: [] });
  });

  it("commits the preparation, the meta and summary.deciding{finish}; emits compaction_start; leaves the inbox alone", async () => {
    const result = await withCompactionRig(
      async ({ lane, session, events }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        const busy = unwrap(await lane.accept({ kind: "prompt", prompt: "hold" }));
        unwrap(await lane.followUp("queued before"));
        settledRecord(await lane.drive({ operationId: busy.operationId }));
        unwrap(await lane.nextRun("stays queued"));
        events.length = 0;
        const admission = unwrap(await lane.accept({ kind: "compaction", customInstructions: "keep names" }));
        const stored = readOperation(session, admission.operationId);
        const taskId = stored?.state.at === "summary.deciding" ? stored.state.task.taskId : "";
        return {
          admission,
          stored,
          preparation: session.getValue(operationPreparation(admission.operationId, taskId))?.value,
          events: types(events),
          start: events[0],
          inbox: lane.state.inbox.map((item) => item.kind),
        };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.admission.kind).toBe("compaction");
    expect(result.stored?.meta.intent).toEqual({ kind: "compaction", customInstructions: "keep names" });
    expect(result.stored?.state).toMatchObject({
      at: "summary.deciding",
      task: { reason: "manual", customInstructions: "keep names", boundary: { kind: "finish" } },
      control: { status: "running" },
    });
    expect(result.preparation).toMatchObject({ kind: "compaction" });
    expect(result.events).toEqual(["compaction_start"]);
    expect(result.start).toMatchObject({ type: "compaction_start", reason: "manual", runId: result.admission.operationId });
    expect(result.inbox).toEqual(["nextRun"]);
  });
});

describe("compaction drive (finish boundary)", () => {
  it("places a compaction entry on the tip: summary by the model, retained tail, files, usage; one usage row per request", async () => {
    const result = await withCompactionRig(
      async ({ lane, session, events, requests, usageRows }) => {
        unwrap(await lane.prompt(`first question ${ten}`));
        unwrap(await lane.prompt(`second question ${ten}`));
        const tip = lane.getTipId();
        const rowsBefore = usageRows().length;
        events.length = 0;
        requests.length = 0;
        const { compaction, run } = unwrap(await lane.compact("mention the questions"));
        const [entry] = compactionsOf(lane);
        return {
          compaction,
          run,
          tip,
          entry,
          newTip: lane.getTipId(),
          events: types(events),
          end: events.find((event) => event.type === "compaction_end"),
          request: requests[0],
          requestCount: requests.length,
          rows: usageRows().slice(rowsBefore),
          leftovers: leftoverOperationValues(session, compaction.operationId),
          violations: checkInvariants(session),
        };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.compaction).toMatchObject({ kind: "compaction", status: "completed", fromTipId: result.tip, tipId: result.entry?.id });
    expect(result.run).toBeUndefined();
    expect(result.newTip).toBe(result.entry?.id);
    expect(result.entry).toMatchObject({ parentId: result.tip, fromHook: false, details: { readFiles: [], modifiedFiles: [] } });
    // The echo model answers with the request's text: the summary is the summarizer's prompt.
    expect(result.entry?.summary).toContain("[User]: first question");
    expect(result.entry?.summary).toContain("Additional focus: mention the questions");
    expect(result.entry?.retainedTail.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(result.entry?.tokensBefore).toBeGreaterThan(0);
    expect(result.entry?.usage).toEqual(result.rows[0]?.usage);
    expect(result.events).toEqual(["compaction_start", "usage", "entry_added", "compaction_end"]);
    expect(result.end).toMatchObject({ status: "completed", reason: "manual", entryId: result.entry?.id });
    // A structural request: its own identity, never the lane's cache, no deferral; the summarizer's system prompt.
    expect(result.requestCount).toBe(1);
    expect(result.request?.options?.sessionId).toBeDefined();
    expect(result.request?.options?.sessionId).not.toContain(":main");
    expect(result.request?.options?.cacheRetention).toBe("none");
    expect(result.request?.context.systemPrompt).toContain("summarization");
    expect(result.rows).toHaveLength(1);
    expect(result.rows[0]).toMatchObject({ entryId: result.entry?.id, adjustment: false });
    expect(result.leftovers).toEqual([]);
    expect(result.violations).toEqual([]);
  });

  it("a split turn makes two nested requests, each settling its own usage row; the summary joins both", async () => {
    const result = await withCompactionRig(
      async ({ lane, session, events, requests, usageRows, harness }) => {
        unwrap(await lane.prompt("the opening turn"));
        unwrap(await lane.prompt("the big turn"));
        const rowsBefore = usageRows().length;
        const steps: string[] = [];
        harness.hooks.on("before_request", (event) => {
          steps.push(`${event.step}:${event.attempt}`);
          return {};
        });
        requests.length = 0;
        events.length = 0;
        const { compaction } = unwrap(await lane.compact());
        return { compaction, entry: compactionsOf(lane)[0], texts: requests.map(requestTexts), rows: usageRows().slice(rowsBefore), usageEvents: events.filter((event) => event.type === "usage").length, steps, violations: checkInvariants(session) };
      },
      { model: SCRIPT, steps: [{ text: "answer one" }, { text: "answer two, which is long enough to keep alone" }, { text: "HISTORY" }, { text: "PREFIX" }], settings: { ...COMPACT_EAGERLY, compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 5 } } },
    );
    expect(result.compaction.status).toBe("completed");
    expect(result.entry?.summary).toBe(`HISTORY${TURN_PREFIX_HEADING}PREFIX`);
    expect(result.entry?.retainedTail.map((message) => message.role)).toEqual(["assistant"]);
    expect(result.texts[0]?.[0]).toContain("[User]: the opening turn");
    expect(result.texts[1]?.[0]).toContain("[User]: the big turn");
    expect(result.texts[1]?.[0]).toContain("PREFIX of a turn");
    expect(result.rows).toHaveLength(2);
    expect(result.usageEvents).toBe(2);
    expect(result.steps).toEqual(["compaction:1", "compaction:1"]);
    expect(result.violations).toEqual([]);
  });

  it("a run after compaction sends the summary, the retained tail and later messages, and nothing older", async () => {
    const result = await withCompactionRig(
      async ({ lane, requests }) => {
        unwrap(await lane.prompt(`ancient history ${ten}`));
        unwrap(await lane.prompt(`recent ${ten}`));
        unwrap(await lane.compact());
        requests.length = 0;
        unwrap(await lane.prompt("after the compaction"));
        return { texts: requestTexts(requests[0]), roles: requests[0]?.context.messages.map((message) => message.role), summary: compactionsOf(lane)[0]?.summary ?? "" };
      },
      { settings: COMPACT_EAGERLY },
    );
    // The summary (as a user message), the kept turn, then the new prompt; "ancient history" only inside the summary.
    expect(result.roles).toEqual(["user", "user", "assistant", "user"]);
    expect(result.texts[0]).toContain("compacted into this summary");
    expect(result.texts[0]).toContain(result.summary);
    expect(result.texts[1]).toBe(`recent ${ten}`);
    expect(result.texts[3]).toBe("after the compaction");
    expect(result.texts.slice(1).some((text) => text.includes("ancient history"))).toBe(false);
  });

  it("a second compaction updates the previous summary and carries it forward", async () => {
    const result = await withCompactionRig(
      async ({ lane, requests }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        unwrap(await lane.compact());
        unwrap(await lane.prompt(`three ${ten}`));
        requests.length = 0;
        unwrap(await lane.compact());
        return { request: requestTexts(requests[0])[0] ?? "", compactions: compactionsOf(lane).length };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.compactions).toBe(2);
    expect(result.request).toContain("<previous-summary>");
    // The first summary covered "one"; the update covers what was kept then, up to the new cut.
    const [conversation] = result.request.split("<previous-summary>");
    expect(conversation).toContain("[User]: two");
    expect(conversation).not.toContain("[User]: one");
  });

  it("a watcher's fold across a compaction equals a fresh snapshot (the transcript restarts at the entry)", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        const watched = await openWatched(lane);
        unwrap(await lane.compact());
        const compacted = await foldAndCapture(harness, lane, watched);
        unwrap(await lane.prompt("three"));
        const later = await foldAndCapture(harness, lane, watched);
        return { compacted, later };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.compacted.folded).toStrictEqual(result.compacted.fresh);
    expect(result.compacted.fresh.transcript.map((entry) => entry.type)).toEqual(["compaction"]);
    expect(result.compacted.fresh.lastResult).toMatchObject({ kind: "compaction", status: "completed" });
    expect(result.later.folded).toStrictEqual(result.later.fresh);
  });
});

describe("before_compaction and failures", () => {
  it("a decline ends the compaction declined; nothing is placed and the model is not asked", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, requests, session }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        const tip = lane.getTipId();
        let seen: unknown;
        harness.hooks.on("before_compaction", (event) => {
          seen = { reason: event.reason, summarize: event.preparation.messagesToSummarize.length, tail: event.preparation.retainedTail.length };
          return { decline: true };
        });
        requests.length = 0;
        const { compaction } = unwrap(await lane.compact());
        return { compaction, seen, tip, after: lane.getTipId(), requests: requests.length, leftovers: leftoverOperationValues(session, compaction.operationId) };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.compaction).toMatchObject({ status: "declined", tipId: result.tip });
    expect(result.seen).toEqual({ reason: "manual", summarize: 2, tail: 2 });
    expect(result.after).toBe(result.tip);
    expect(result.requests).toBe(0);
    expect(result.leftovers).toEqual([]);
  });

  it("a hook-supplied result is placed as-is (fromHook) with its usage row", async () => {
    const usage = { input: 5, output: 7, cacheRead: 0, cacheWrite: 0, totalTokens: 12, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    const result = await withCompactionRig(
      async ({ lane, harness, requests, usageRows }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        harness.hooks.on("before_compaction", () => ({ compaction: { summary: "from the hook", tokensBefore: 42, retainedTail: [], usage } }));
        requests.length = 0;
        const rowsBefore = usageRows().length;
        const { compaction } = unwrap(await lane.compact());
        return { compaction, entry: compactionsOf(lane)[0], requests: requests.length, rows: usageRows().slice(rowsBefore) };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.compaction.status).toBe("completed");
    expect(result.entry).toMatchObject({ summary: "from the hook", tokensBefore: 42, retainedTail: [], fromHook: true, usage });
    expect(result.requests).toBe(0);
    expect(result.rows.map((row) => row.usage)).toEqual([usage]);
  });

  it("a result too large to store fails the compaction compaction_too_large at once; nothing is placed and the lane runs on", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        const tip = lane.getTipId();
        const huge = { role: "user" as const, content: "x".repeat(17 * 1024 * 1024), timestamp: 1 };
        harness.hooks.on("before_compaction", () => ({ compaction: { summary: "too big", tokensBefore: 1, retainedTail: [huge] } }));
        const { compaction } = unwrap(await lane.compact());
        const after = unwrap(await lane.prompt("still here"));
        return { compaction, compactions: compactionsOf(lane).length, tip, after };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.compaction).toMatchObject({ status: "failed", error: { code: "compaction_too_large" }, tipId: result.tip });
    expect(result.compactions).toBe(0);
    expect(result.after).toMatchObject({ status: "completed" });
  });

  it("a missing model fails the compaction model_unavailable; nothing is fabricated", async () => {
    const result = await withCompactionRig(
      async ({ lane, models, usageRows }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        const rows = usageRows().length;
        models.missing = true;
        const { compaction } = unwrap(await lane.compact());
        return { compaction, compactions: compactionsOf(lane).length, rows: usageRows().length - rows };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.compaction).toMatchObject({ status: "failed", error: { code: "model_unavailable" } });
    expect(result).toMatchObject({ compactions: 0, rows: 0 });
  });

  it("a retryable failure waits and retries; each failed request keeps its usage row", async () => {
    const result = await withCompactionRig(
      async ({ lane, events, usageRows }) => {
        unwrap(await lane.prompt("one"));
        unwrap(await lane.prompt("two"));
        const rows = usageRows().length;
        events.length = 0;
        const { compaction } = unwrap(await lane.compact());
        return { compaction, entry: compactionsOf(lane)[0], rows: usageRows().length - rows, events: types(events).filter((type) => type.startsWith("retry")) };
      },
      { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }, { error: "flaky", retryable: true }, { text: "SUMMARY" }], settings: { ...COMPACT_EAGERLY, compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } } },
    );
    expect(result.compaction.status).toBe("completed");
    expect(result.entry?.summary.startsWith("SUMMARY")).toBe(true);
    expect(result.rows).toBe(2);
    expect(result.events).toEqual(["retry_scheduled", "retry_start", "retry_end"]);
  });

  it("retries exhausted on a provider that never answered fail the compaction provider_unavailable, not summary_error", async () => {
    const flaky = { error: "flaky", retryable: true } as const;
    const result = await failedCompaction([flaky, flaky], { retry: { enabled: true, maxRetries: 1, baseDelayMs: 1 } });
    expect(result.compaction).toMatchObject({ status: "failed", error: { code: "provider_unavailable", details: { attempts: 2 } } });
    expect(result.after).toBe(result.tip);
  });

  it("a failure that is not retryable fails the compaction and moves nothing", async () => {
    const result = await failedCompaction([{ error: "quota" }]);
    expect(result.compaction).toMatchObject({ status: "failed", error: { code: "summary_error" } });
    expect(result.after).toBe(result.tip);
  });

  it("lane.compact runs the continuation run B when input was queued during the compaction, and none after an abort", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness }) => {
        unwrap(await lane.prompt(`one ${ten}`));
        unwrap(await lane.prompt(`two ${ten}`));
        let queueOnce = true;
        harness.hooks.on("before_compaction", async () => {
          if (queueOnce) unwrap(await lane.followUp("after compacting"));
          queueOnce = false;
          return {};
        });
        const continued = unwrap(await lane.compact());
        const afterRun = lane.findEntries({ order: "oldestFirst" }).map((entry) => entry.type);
        unwrap(await lane.prompt(`three ${ten}`));
        unwrap(await lane.nextRun("waits for a run"));
        harness.hooks.on("before_compaction", async (event) => {
          unwrap(await lane.requestAbort(event.runId));
          return {};
        });
        const aborted = unwrap(await lane.compact());
        return { continued, afterRun, aborted, inbox: lane.state.inbox.map((item) => item.kind) };
      },
      { settings: COMPACT_EAGERLY },
    );
    expect(result.continued.compaction.status).toBe("completed");
    expect(result.continued.run).toMatchObject({ kind: "run", status: "completed", fromTipId: result.continued.compaction.tipId });
    expect(result.afterRun).toEqual(["message", "message", "message", "message", "compaction", "message", "message"]);
    expect(result.aborted.compaction.status).toBe("aborted");
    expect(result.aborted.run).toBeUndefined();
    expect(result.inbox).toEqual(["nextRun"]);
  });
});

/** Two turns, then a compaction whose summary requests answer `summarySteps`; the tip before and after. */
async function failedCompaction(summarySteps: ScriptStep[], settings: HarnessSettingsPatch = {}) {
  return withCompactionRig(
    async ({ lane }) => {
      unwrap(await lane.prompt("one"));
      unwrap(await lane.prompt("two"));
      const tip = lane.getTipId();
      const { compaction } = unwrap(await lane.compact());
      return { compaction, tip, after: lane.getTipId() };
    },
    { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }, ...summarySteps], settings: { ...COMPACT_EAGERLY, ...settings, compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 } } },
  );
}
