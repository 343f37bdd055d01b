import { describe, expect, it } from "vitest";
import type { HarnessEvent } from "../../schema/lane.ts";
import { ECHO, leftoverOperationValues, types, withRig } from "./helpers.ts";
import { settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";
import { isRebase, reduceLaneSnapshot } from "../../schema/reduce-lane-snapshot.ts";
import { checkInvariants } from "./invariants.ts";
import { deliveredSoFar, foldEvents, openWatched } from "./watch-fold.ts";

// Unsummarized navigation (reference §3.1 navigation acceptance, §3.4 `navigation.ready_to_commit`,
// §4.5, §4.6): acceptance validates and opens the leaf; the drive moves the tip in one commit with
// the optional label and the record; abort moves nothing; a crash before the commit commits later.

const briefOf = (events: readonly HarnessEvent[]) => types(events.filter((event) => event.type !== "message_update"));

describe("navigation", () => {
  it("moves the tip to an earlier entry with a label; the next run continues from there", async () => {
    const result = await withRig(async ({ session, harness, events }) => {
      const lane = await harness.lane("main");
      unwrap(await lane.prompt("first"));
      const afterFirst = lane.getTipId();
      unwrap(await lane.prompt("second"));
      const sourceTip = lane.getTipId();
      if (!afterFirst || !sourceTip) throw new Error("no tip");
      events.length = 0;
      const admission = unwrap(await lane.accept({ kind: "navigation", targetId: afterFirst, label: "fork point" }));
      const record = settledRecord(await lane.drive({ operationId: admission.operationId }));
      const navigated = { tip: lane.getTipId(), label: session.getLabel(afterFirst), events: briefOf(events) };
      unwrap(await lane.prompt("third"));
      const path = lane.findEntries({ order: "oldestFirst" }).map((entry) => (entry.type === "message" && entry.message.role === "user" && typeof entry.message.content === "string" ? entry.message.content : entry.type));
      return { admission, record, navigated, sourceTip, afterFirst, path, leftovers: leftoverOperationValues(session, admission.operationId), violations: checkInvariants(session) };
    });
    expect(result.admission.kind).toBe("navigation");
    expect(result.record).toMatchObject({ kind: "navigation", status: "completed", fromTipId: result.sourceTip, tipId: result.afterFirst });
    expect(result.navigated).toEqual({ tip: result.afterFirst, label: "fork point", events: ["navigation_start", "value_update", "navigation_end"] });
    // The abandoned turn is not on the lane's path any more; the new run hangs off the target.
    expect(result.path).toEqual(["first", "message", "third", "message"]);
    expect(result.leftovers).toEqual([]);
    expect(result.violations).toEqual([]);
  });

  it("navigates to the root (null): the lane's branch is empty and the next prompt starts a new root", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      unwrap(await lane.prompt("before"));
      const record = unwrap(await lane.navigate(null)).navigation;
      const emptyTip = lane.getTipId();
      unwrap(await lane.prompt("after"));
      const first = lane.findEntries({ order: "oldestFirst" })[0];
      return { record, emptyTip, firstParent: first?.parentId, length: lane.findEntries({}).length };
    });
    expect(result.record).toMatchObject({ kind: "navigation", status: "completed", tipId: null });
    expect(result.emptyTip).toBeNull();
    expect(result.firstParent).toBeNull();
    expect(result.length).toBe(2);
  });

  it("refuses the current tip, a labelled root, an unknown target and a busy lane, writing nothing", async () => {
    const result = await withDriveRig(
      async ({ harness, session }) => {
        const lane = await harness.lane("main");
        unwrap(await lane.prompt("only"));
        const tip = lane.getTipId();
        const before = session.findEntries({ order: "asc" }).length;
        const refusals = [
          await lane.accept({ kind: "navigation", targetId: tip }),
          await lane.accept({ kind: "navigation", targetId: null, label: "root" }),
          await lane.accept({ kind: "navigation", targetId: session.idGenerator.next() }),
        ];
        const busy = unwrap(await lane.accept({ kind: "prompt", prompt: "busy" }));
        const whileBusy = await lane.accept({ kind: "navigation", targetId: null });
        settledRecord(await lane.drive({ operationId: busy.operationId }));
        return { refusals, whileBusy, entriesBefore: before, open: lane.state.operation, violations: checkInvariants(session) };
      },
      { model: ECHO },
    );
    expect(result.refusals.map((refusal) => (refusal.ok ? "ok" : refusal.error))).toEqual([
      { code: "InvalidNavigation", lane: "main", reason: "current_tip" },
      { code: "InvalidNavigation", lane: "main", reason: "root_label" },
      expect.objectContaining({ code: "UnknownTarget" }),
    ]);
    expect(result.whileBusy).toMatchObject({ ok: false, error: { code: "LaneBusy", operationKind: "run" } });
    expect(result.open).toBeNull();
    expect(result.violations).toEqual([]);
  });

  it("an abort before the commit moves nothing and ends the navigation aborted", async () => {
    const result = await withDriveRig(
      async ({ harness, session, events }) => {
        const lane = await harness.lane("main");
        unwrap(await lane.prompt("one"));
        const target = lane.getTipId();
        unwrap(await lane.prompt("two"));
        const tip = lane.getTipId();
        const { operationId } = unwrap(await lane.accept({ kind: "navigation", targetId: target, label: "never" }));
        unwrap(await lane.requestAbort(operationId));
        const record = settledRecord(await lane.drive({ operationId }));
        return { record, tip, after: lane.getTipId(), label: target ? session.getLabel(target) : "x", end: events.filter((event) => event.type === "navigation_end") };
      },
      { model: ECHO },
    );
    expect(result.record).toMatchObject({ kind: "navigation", status: "aborted", tipId: result.tip });
    expect(result.after).toBe(result.tip);
    expect(result.label).toBeUndefined();
    expect(result.end).toMatchObject([{ status: "aborted" }]);
  });

  it("accepted but not driven when the object dies: the fresh object lists it and commits it once", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        unwrap(await lane.prompt("one"));
        const target = lane.getTipId();
        unwrap(await lane.prompt("two"));
        const { operationId } = unwrap(await lane.accept({ kind: "navigation", targetId: target }));
        await rig.harness.close();
        const reopened = await rig.reopen();
        const again = await reopened.harness.lane("main");
        const restoredAt = again.state.operation?.state.at;
        const record = settledRecord(await again.drive({ operationId }));
        return { open: reopened.open, restoredAt, record, target, tip: again.getTipId(), violations: checkInvariants(reopened.session) };
      },
      { model: ECHO },
    );
    expect(result.open).toMatchObject([{ kind: "navigation" }]);
    expect(result.restoredAt).toBe("navigation.ready_to_commit");
    expect(result.record).toMatchObject({ status: "completed", tipId: result.target });
    expect(result.tip).toBe(result.target);
    expect(result.violations).toEqual([]);
  });

  it("a watcher folds through navigation_start and is told to rebase at navigation_end; its resnapshot equals a fresh one", async () => {
    const result = await withRig(async ({ harness }) => {
      const lane = await harness.lane("main");
      unwrap(await lane.prompt("one"));
      const target = lane.getTipId();
      unwrap(await lane.prompt("two"));
      const watched = await openWatched(lane);
      const { operationId } = unwrap(await lane.accept({ kind: "navigation", targetId: target }));
      await deliveredSoFar(harness);
      const opened = foldEvents(watched.watch.snapshot, [...watched.events]);
      settledRecord(await lane.drive({ operationId }));
      await deliveredSoFar(harness);
      const end = watched.events.find((event) => event.type === "navigation_end");
      const rebased = end ? isRebase(reduceLaneSnapshot(opened, end)) : false;
      const resnapshot = await watched.watch.resnapshot();
      const fresh = await lane.watch();
      fresh.unsubscribe();
      return { opened: opened.operation, rebased, resnapshot, fresh: fresh.snapshot, target };
    });
    expect(result.opened).toMatchObject({ kind: "navigation" });
    expect(result.rebased).toBe(true);
    expect(result.resnapshot).toStrictEqual(result.fresh);
    expect(result.fresh.tipId).toBe(result.target);
  });
});
