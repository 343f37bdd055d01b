import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { BranchSummaryEntry, Entry } from "../../schema/entries.ts";
import { isRebase, reduceLaneSnapshot } from "../../schema/reduce-lane-snapshot.ts";
import { checkInvariants } from "./invariants.ts";
import { crashAt, leafOf, settledRecord, stepsTaken, until } from "./crash-rig.ts";
import { deliveredSoFar, openWatched } from "./watch-fold.ts";
import { unwrap } from "./drive-helpers.ts";
import { leftoverOperationValues, SCRIPT, types } from "./helpers.ts";
import { requestTexts, withCompactionRig } from "./compaction-helpers.ts";

// Summarized navigation (reference §3.4 `commit_navigation`, §6.5): the branch the tip leaves is
// summarized (after the common ancestor) through the summary leaves, and one commit moves the tip
// to the target, places the branch-summary entry under it and labels the target.

const NO_RETRY = { retry: { enabled: false, maxRetries: 0, baseDelayMs: 0 } };

/** "one" → a (the fork point), then "two" → b: the tip is b; navigation goes back to a. */
async function twoTurns(lane: AgentLane): Promise<{ forkPoint: string; tip: string }> {
  unwrap(await lane.prompt("one"));
  const forkPoint = lane.getTipId();
  unwrap(await lane.prompt("two"));
  const tip = lane.getTipId();
  if (!forkPoint || !tip) throw new Error("no tip");
  return { forkPoint, tip };
}

const summariesOf = (entries: readonly Entry[]): BranchSummaryEntry[] => entries.filter((entry): entry is BranchSummaryEntry => entry.type === "branch_summary");

describe("summarized navigation", () => {
  it("summarizes the abandoned branch and places the summary under the target in one commit; the next run sees it", async () => {
    const result = await withCompactionRig(
      async ({ lane, session, events, requests, harness }) => {
        const { forkPoint, tip } = await twoTurns(lane);
        const steps: string[] = [];
        harness.hooks.on("before_request", (event) => {
          steps.push(event.step);
          return {};
        });
        events.length = 0;
        requests.length = 0;
        const { navigation } = unwrap(await lane.navigate(forkPoint, { summarize: true, label: "back", customInstructions: "name the files" }));
        const summaryRequest = requestTexts(requests[0])[0] ?? "";
        const [entry] = summariesOf(lane.findEntries({ order: "oldestFirst" }));
        const navigationEvents = types(events);
        requests.length = 0;
        unwrap(await lane.prompt("three"));
        return {
          navigation,
          forkPoint,
          tip,
          entry,
          newTipParent: entry?.parentId,
          label: session.getLabel(forkPoint),
          summaryRequest,
          systemPrompt: steps,
          navigationEvents,
          next: requestTexts(requests[0]),
          roles: requests[0]?.context.messages.map((message) => message.role),
          leftovers: leftoverOperationValues(session, navigation.operationId),
          violations: checkInvariants(session),
        };
      },
      { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }, { text: "BRANCH SUMMARY" }, { text: "c" }] },
    );
    expect(result.navigation).toMatchObject({ kind: "navigation", status: "completed", fromTipId: result.tip, tipId: result.entry?.id });
    expect(result.entry).toMatchObject({ parentId: result.forkPoint, fromId: result.tip, summary: "BRANCH SUMMARY", fromHook: false, details: { readFiles: [], modifiedFiles: [] } });
    expect(result.entry?.usage).toBeDefined();
    expect(result.label).toBe("back");
    // Only the abandoned turn is summarized, never the path the lane keeps.
    expect(result.summaryRequest).toContain("[User]: two");
    expect(result.summaryRequest).toContain("[Assistant]: b");
    expect(result.summaryRequest).not.toContain("[User]: one");
    expect(result.summaryRequest).toContain("Additional focus: name the files");
    expect(result.systemPrompt).toEqual(["branch_summary", "assistant"]);
    expect(result.navigationEvents).toEqual(["navigation_start", "usage", "entry_added", "value_update", "navigation_end"]);
    // The next run: the kept turn, the branch summary, the new prompt.
    expect(result.next[0]).toBe("one");
    expect(result.next[2]).toContain("BRANCH SUMMARY");
    expect(result.next.at(-1)).toBe("three");
    expect(result.leftovers).toEqual([]);
    expect(result.violations).toEqual([]);
  });

  it("before_navigation's summary is used as-is (fromHook, its usage row); a decline moves nothing", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, usageRows }) => {
        const { forkPoint, tip } = await twoTurns(lane);
        let answer: "summary" | "decline" = "summary";
        let seen: string[] = [];
        harness.hooks.on("before_navigation", (event) => {
          if (seen.length === 0) seen = event.preparation.messages.map((message) => message.role);
          if (answer === "decline") return { decline: true };
          return { summary: { summary: "from the hook", readFiles: ["a.ts"], modifiedFiles: ["b.ts"], usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } } } };
        });
        const rows = usageRows().length;
        const hooked = unwrap(await lane.navigate(forkPoint, { summarize: true })).navigation;
        const entry = summariesOf(lane.findEntries({ order: "oldestFirst" }))[0];
        const rowsAdded = usageRows().length - rows;
        unwrap(await lane.prompt("again"));
        const before = lane.getTipId();
        answer = "decline";
        const declined = unwrap(await lane.navigate(forkPoint, { summarize: true, label: "never" })).navigation;
        return { hooked, entry, rowsAdded, seen, declined, before, after: lane.getTipId(), tip };
      },
      { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }, { text: "c" }] },
    );
    expect(result.seen).toEqual(["user", "assistant"]);
    expect(result.hooked.status).toBe("completed");
    expect(result.entry).toMatchObject({ summary: "from the hook", fromHook: true, details: { readFiles: ["a.ts"], modifiedFiles: ["b.ts"] } });
    expect(result.rowsAdded).toBe(1);
    expect(result.declined).toMatchObject({ status: "declined", tipId: result.before });
    expect(result.after).toBe(result.before);
  });

  it("a failed summary or a missing model fails the navigation and moves nothing", async () => {
    const result = await withCompactionRig(
      async ({ lane, models }) => {
        const { forkPoint, tip } = await twoTurns(lane);
        const failed = unwrap(await lane.navigate(forkPoint, { summarize: true })).navigation;
        const afterFailure = lane.getTipId();
        models.missing = true;
        const missing = settledRecord(await lane.drive({ operationId: unwrap(await lane.accept({ kind: "navigation", targetId: forkPoint, summarize: true })).operationId }));
        return { failed, missing, afterFailure, after: lane.getTipId(), tip, summaries: summariesOf(lane.findEntries({})).length };
      },
      { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }, { error: "cannot summarize" }], settings: NO_RETRY },
    );
    expect(result.failed).toMatchObject({ status: "failed", error: { code: "summary_error" }, tipId: result.tip });
    expect(result.missing).toMatchObject({ status: "failed", error: { code: "model_unavailable" } });
    expect(result.afterFailure).toBe(result.tip);
    expect(result.after).toBe(result.tip);
    expect(result.summaries).toBe(0);
  });

  it("an abort while summarizing ends it aborted: navigation_end, nothing moved, nothing left", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness, session, events }) => {
        const { forkPoint, tip } = await twoTurns(lane);
        harness.hooks.on("before_navigation", (_event, { signal }) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason))));
        const { operationId } = unwrap(await lane.accept({ kind: "navigation", targetId: forkPoint, summarize: true }));
        const driven = lane.drive({ operationId });
        await until(() => leafOf(lane) === "summary.deciding", "the summary");
        events.length = 0;
        unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await driven);
        return { record, tip, after: lane.getTipId(), end: events.filter((event) => event.type === "navigation_end"), leftovers: leftoverOperationValues(session, operationId) };
      },
      { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.record).toMatchObject({ kind: "navigation", status: "aborted", tipId: result.tip });
    expect(result.after).toBe(result.tip);
    expect(result.end).toMatchObject([{ status: "aborted" }]);
    expect(result.leftovers).toEqual([]);
  });

  it("refuses a summarized move to the root; a target ahead of the tip leaves nothing behind and moves without a summary", async () => {
    const result = await withCompactionRig(
      async ({ lane, requests }) => {
        const { forkPoint, tip } = await twoTurns(lane);
        const root = await lane.accept({ kind: "navigation", targetId: null, summarize: true });
        unwrap(await lane.navigate(forkPoint));
        requests.length = 0;
        const ahead = unwrap(await lane.navigate(tip, { summarize: true })).navigation;
        return { root, ahead, tip, requests: requests.length, summaries: summariesOf(lane.findEntries({})).length };
      },
      { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }] },
    );
    expect(result.root).toEqual({ ok: false, error: { code: "InvalidNavigation", lane: "main", reason: "summarize_root" } });
    expect(result.ahead).toMatchObject({ status: "completed", tipId: result.tip });
    expect(result.requests).toBe(0);
    expect(result.summaries).toBe(0);
  });

  it("a watcher is told to rebase, and its resnapshot equals a fresh snapshot", async () => {
    const result = await withCompactionRig(
      async ({ lane, harness }) => {
        const { forkPoint } = await twoTurns(lane);
        const watched = await openWatched(lane);
        unwrap(await lane.navigate(forkPoint, { summarize: true }));
        await deliveredSoFar(harness);
        const rebased = watched.events.some((event) => isRebase(reduceLaneSnapshot(watched.watch.snapshot, event)));
        watched.watch.unsubscribe();
        const resnapshot = await lane.watch();
        resnapshot.unsubscribe();
        const fresh = await lane.watch();
        fresh.unsubscribe();
        return { rebased, resnapshot: resnapshot.snapshot, fresh: fresh.snapshot, transcript: fresh.snapshot.transcript.map((entry) => entry.type) };
      },
      { model: SCRIPT, steps: [{ text: "a" }, { text: "b" }, { text: "S" }] },
    );
    expect(result.rebased).toBe(true);
    expect(result.resnapshot).toEqual(result.fresh);
    expect(result.transcript).toEqual(["message", "message", "branch_summary"]);
  });
});

describe("summarized navigation across a kill", () => {
  it("killed inside the summary request: retried after restore, one summary entry, the tip on it", async () => {
    let forkPoint = "";
    const crashed = await crashAt({
      steps: [{ text: "a" }, { text: "b" }, { text: "LOST", delayMs: 600_000 }, { text: "SUMMARY" }],
      settings: { retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 } },
      accept: async (_rig, lane) => {
        forkPoint = (await twoTurns(lane)).forkPoint;
        return unwrap(await lane.accept({ kind: "navigation", targetId: forkPoint, summarize: true })).operationId;
      },
      park: ({ session }, lane) => () => leafOf(lane) === "summary.effect_pending" && stepsTaken(session) === 3,
    });
    expect(crashed.restored).toMatchObject({ at: "summary.effect_pending", task: { boundary: { kind: "commit_navigation", targetId: forkPoint } } });
    const record = settledRecord(crashed.driven);
    const summaries = summariesOf(crashed.transcript);
    expect(record).toMatchObject({ kind: "navigation", status: "completed", tipId: summaries[0]?.id });
    expect(summaries.map((entry) => entry.summary)).toEqual(["SUMMARY"]);
    expect(summaries[0]?.parentId).toBe(forkPoint);
    expect(crashed.violations).toEqual([]);
  });
});
