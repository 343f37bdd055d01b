import { expect } from "vitest";
import type { WatchHandle } from "../../../harness/runtime/watch.ts";
import type { HarnessEvent, LaneSnapshot } from "../../../schema/lane.ts";
import { COMPACT_EAGERLY } from "../compaction-helpers.ts";
import { ECHO } from "../helpers.ts";
import { acceptPrompt, settledRecord } from "../crash-rig.ts";
import { deliveredSoFar, foldEvents } from "../watch-fold.ts";
import { latch, race, rows, type RaceRig } from "./rig.ts";
import { ran, type RaceEntry } from "./types.ts";

// Observation and invocation (reference §5.3, §4.1, §4.7): a watcher's capture is taken on the
// line, so whichever commit comes first is either in its snapshot or among its events, never both
// and never neither; the fold of snapshot + events must equal a fresh snapshot in both orders.

interface Watcher {
  handle: WatchHandle;
  events: HarnessEvent[];
}

function started(handle: WatchHandle): Watcher {
  const events: HarnessEvent[] = [];
  handle.start((event) => void events.push(event));
  return { handle, events };
}

/** Folds the watcher's snapshot over its events and compares with a fresh capture. */
async function foldMatchesFresh(rig: RaceRig, watcher: Watcher, snapshot: LaneSnapshot = watcher.handle.snapshot): Promise<boolean> {
  await deliveredSoFar(rig.harness);
  const fresh = await rig.lane.watch();
  fresh.unsubscribe();
  watcher.handle.unsubscribe();
  // A difference fails here with its diff; the outcome records that the fold matched.
  expect(foldEvents(snapshot, watcher.events)).toEqual(fresh.snapshot);
  return true;
}

/** A watcher registers just before or just after a commit that publishes events (an enqueue). */
async function registrationVsPublication(watchFirst: boolean) {
  return race({}, async (rig) => {
    await rig.line.hold();
    const watch = () => rig.lane.watch();
    const publish = () => rig.lane.steer("queued");
    const one = watchFirst ? watch() : publish();
    await rig.line.arrived(1, "the first on the line");
    const two = watchFirst ? publish() : watch();
    await rig.line.arrived(2, "the second on the line");
    rig.line.release();
    const handle = watchFirst ? await one : await two;
    await Promise.all([one, two]);
    if (!("snapshot" in handle)) throw new Error("no watch");
    const watcher = started(handle);
    await deliveredSoFar(rig.harness);
    return {
      inSnapshot: watcher.handle.snapshot.queues.length,
      eventTypes: watcher.events.map((event) => event.type),
      foldMatchesFresh: await foldMatchesFresh(rig, watcher),
    };
  });
}

/**
 * A watcher's capture (a fresh watch, or a resnapshot of an existing one) and the resuming pass's
 * first commit, in either order; the accepted run is then driven to its record.
 */
async function captureVsResume(captureFirst: boolean, mode: "attach" | "resnapshot") {
  return race({ steps: [{ text: "answer" }] }, async (rig) => {
    const operationId = await acceptPrompt(rig.lane, "go");
    // The pass's first commit then places this steer (a start with nothing to place commits nothing).
    await rig.lane.steer("steered");
    const existing = mode === "resnapshot" ? started(await rig.lane.watch()) : undefined;
    const probe = await rig.lane.watch();
    probe.unsubscribe();
    const before = JSON.stringify(probe.snapshot);
    await rig.line.hold();
    const capture = async (): Promise<{ watcher: Watcher; snapshot: LaneSnapshot }> => {
      if (!existing) {
        const watcher = started(await rig.lane.watch());
        return { watcher, snapshot: watcher.handle.snapshot };
      }
      const snapshot = await existing.handle.resnapshot();
      existing.events.length = 0;
      existing.handle.start((event) => void existing.events.push(event));
      return { watcher: existing, snapshot };
    };
    let captured: Promise<{ watcher: Watcher; snapshot: LaneSnapshot }> | undefined;
    if (captureFirst) {
      captured = capture();
      await rig.line.arrived(1, "the capture on the line");
    }
    const driving = rig.lane.drive({ operationId });
    await rig.line.arrived(captureFirst ? 2 : 1, "the pass's first commit on the line");
    captured ??= capture();
    rig.line.release();
    const { watcher, snapshot } = await captured;
    const record = settledRecord(await driving);
    return {
      capturedBeforeStart: JSON.stringify(snapshot) === before,
      record: record.status,
      foldMatchesFresh: await foldMatchesFresh(rig, watcher, snapshot),
    };
  });
}

/** A watch attachment and the harness's close, in either order. */
async function closeVsAttachment(attachFirst: boolean) {
  return race({}, async (rig) => {
    await rig.lane.steer("queued");
    await rig.line.hold();
    const attach = () =>
      rig.lane.watch().then(
        (handle) => ({ ok: true as const, handle }),
        (error: unknown) => ({ ok: false as const, error: error instanceof Error ? error.name : String(error) }),
      );
    const attached = attachFirst ? attach() : undefined;
    if (attached) await rig.line.arrived(1, "the capture on the line");
    const closing = rig.harness.close();
    rig.line.release();
    await closing;
    const result = await (attached ?? attach());
    const reopened = await rig.reopen();
    const fresh = await reopened.lane.watch();
    fresh.unsubscribe();
    return {
      attach: result.ok ? "attached" : result.error,
      snapshotMatchesReopened: result.ok ? JSON.stringify(result.handle.snapshot) === JSON.stringify(fresh.snapshot) : null,
    };
  });
}

/** Two callers of one pass, each with its own signal: which one leaves first. */
async function invocationContexts(installerLeavesFirst: boolean) {
  return race({ steps: [{ text: "answer" }] }, async (rig) => {
    const held = latch();
    rig.harness.hooks.on("after_response", () => held.wait());
    const operationId = await acceptPrompt(rig.lane, "go");
    const installer = new AbortController();
    const joiner = new AbortController();
    const outcome = (driving: ReturnType<RaceRig["lane"]["drive"]>) =>
      driving.then(
        (result) => (result.ok && result.value.kind === "settled" ? result.value.outcome.status : "not settled"),
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
    const installed = outcome(rig.lane.drive({ operationId }, { signal: installer.signal }));
    const joined = outcome(rig.lane.drive({ operationId }, { signal: joiner.signal }));
    await held.entered;
    (installerLeavesFirst ? installer : joiner).abort(new Error("left"));
    const leaver = await (installerLeavesFirst ? installed : joined);
    held.open();
    const stayer = await (installerLeavesFirst ? joined : installed);
    return { leaver, stayer, aborted: rig.events.some((event) => event.type === "operation_abort"), transcript: rows(rig.lane) };
  });
}

/**
 * Manual compaction's acceptance (which commits its preparation, the cut point) and an idle write
 * (appendCustomEntry), in either order on the line.
 */
async function compactionVsIdleWrite(writeFirst: boolean) {
  const long = "x".repeat(40);
  return race({ settings: COMPACT_EAGERLY }, async (rig) => {
    await rig.lane.setModel(ECHO);
    for (const prompt of [`one ${long}`, `two ${long}`]) settledRecord(await rig.lane.drive({ operationId: await acceptPrompt(rig.lane, prompt) }));
    await rig.line.hold();
    const write = () => rig.lane.appendCustomEntry("note", { text: "written" });
    const compact = () => rig.lane.accept({ kind: "compaction" });
    const one = writeFirst ? write() : compact();
    await rig.line.arrived(1, "the first on the line");
    const two = writeFirst ? compact() : write();
    await rig.line.arrived(2, "the second on the line");
    rig.line.release();
    const [written, accepted] = writeFirst ? [await one, await two] : [await two, await one];
    if (!accepted.ok || !("operationId" in accepted.value)) throw new Error("compaction refused");
    const record = settledRecord(await rig.lane.drive({ operationId: accepted.value.operationId }));
    const tail = rows(rig.lane).slice(-2);
    return {
      placedAtOnce: written.ok && "placed" in written.value ? written.value.placed : "refused",
      record: record.status,
      tail,
      queued: rig.lane.state.inbox.map((item) => item.kind),
    };
  });
}

export const observationRaces: RaceEntry[] = [
  {
    name: "watcher registration vs publication",
    orders: [
      ran("the watcher registers first", "its snapshot has an empty queue and it receives the queue_update; the fold equals a fresh snapshot", () => registrationVsPublication(true), {
        inSnapshot: 0,
        eventTypes: ["queue_update"],
        foldMatchesFresh: true,
      }),
      ran("the publication first", "the item is in its snapshot and no event repeats it; the fold equals a fresh snapshot", () => registrationVsPublication(false), {
        inSnapshot: 1,
        eventTypes: [],
        foldMatchesFresh: true,
      }),
    ],
  },
  {
    name: "attachment vs resume",
    orders: [
      ran("the watch attaches before the pass's first commit", "its snapshot shows the accepted operation open; every commit of the run reaches it as events; the fold equals a fresh snapshot", () => captureVsResume(true, "attach"), {
        capturedBeforeStart: true,
        record: "completed",
        foldMatchesFresh: true,
      }),
      ran("the pass's first commit before the attachment", "the snapshot already holds that commit; later events only; the fold equals a fresh snapshot", () => captureVsResume(false, "attach"), {
        capturedBeforeStart: false,
        record: "completed",
        foldMatchesFresh: true,
      }),
    ],
  },
  {
    name: "snapshot vs resume",
    orders: [
      ran("the resnapshot before the pass's first commit", "the new snapshot shows the operation open; the held events fold onto it to a fresh snapshot", () => captureVsResume(true, "resnapshot"), {
        capturedBeforeStart: true,
        record: "completed",
        foldMatchesFresh: true,
      }),
      ran("the pass's first commit before the resnapshot", "events bound before the new snapshot are dropped, none lost or repeated: the fold equals a fresh snapshot", () => captureVsResume(false, "resnapshot"), {
        capturedBeforeStart: false,
        record: "completed",
        foldMatchesFresh: true,
      }),
    ],
  },
  {
    name: "close vs attachment",
    orders: [
      ran("the attachment before the close", "the capture admitted before the seal finishes; its snapshot equals what the reopened harness sees", () => closeVsAttachment(true), {
        attach: "attached",
        snapshotMatchesReopened: true,
      }),
      ran("the close before the attachment", "the watch is refused (the session is closed); nothing is written", () => closeVsAttachment(false), {
        attach: "SessionClosed",
        snapshotMatchesReopened: null,
      }),
    ],
  },
  {
    name: "concurrent invocation contexts",
    orders: [
      ran("the installing caller leaves first", "only that caller is rejected (its own reason); the pass runs on and the joiner gets the record; no abort", () => invocationContexts(true), {
        leaver: "left",
        stayer: "completed",
        aborted: false,
        transcript: ["user: go", "assistant: answer"],
      }),
      ran("the joining caller leaves first", "only the joiner is rejected; the installer gets the record; no abort", () => invocationContexts(false), {
        leaver: "left",
        stayer: "completed",
        aborted: false,
        transcript: ["user: go", "assistant: answer"],
      }),
    ],
  },
  {
    name: "manual-compaction preparation vs idle write",
    orders: [
      ran("the idle write first", "it is placed at the tip at once; the compaction's entry follows it on the tip", () => compactionVsIdleWrite(true), {
        placedAtOnce: true,
        record: "completed",
        tail: ["custom", "compaction"],
        queued: [],
      }),
      ran("the compaction's acceptance first", "the lane is busy: the write is queued (not placed), the compaction places its summary, and the write stays queued for the next acceptance", () => compactionVsIdleWrite(false), {
        placedAtOnce: false,
        record: "completed",
        tail: ["assistant: two xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "compaction"],
        queued: ["write"],
      }),
    ],
  },
];
