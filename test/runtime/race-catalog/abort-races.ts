import type { HarnessEvent } from "../../../schema/lane.ts";
import { ECHO } from "../helpers.ts";
import { acceptPrompt, settledRecord } from "../crash-rig.ts";
import { textOf as textOfMessage } from "../queue-helpers.ts";
import { latch, race, rows, tag, type RaceRig } from "./rig.ts";
import { covered, ran, type RaceEntry } from "./types.ts";

// Durable cancellation and close against the commits of a live pass (reference §4.4, §4.5, §4.7):
// whichever commit reaches the line first decides; "aborted" iff the terminal commits under the
// marker, and a marker for an operation that already settled is OperationMismatch.

/**
 * Holds the pass in `hook` (the last awaited point before the commit under test), takes the line,
 * and lets `command` and the pass's next commit reach the line in the chosen order.
 */
async function raceAtHook<T>(
  rig: RaceRig,
  hook: "after_response" | "before_run_end",
  commandFirst: boolean,
  command: () => Promise<T>,
): Promise<T> {
  const held = latch();
  rig.harness.hooks.on(hook, () => held.wait());
  await held.entered;
  await rig.line.hold();
  const early = commandFirst ? command() : undefined;
  if (early) await rig.line.arrived(1, "the command on the line");
  held.open();
  await rig.line.arrived(commandFirst ? 2 : 1, "the pass's commit on the line");
  const answer = early ?? command();
  rig.line.release();
  return answer;
}

async function abortVsCommit(hook: "after_response" | "before_run_end", abortFirst: boolean) {
  return race({ steps: [{ text: "answer" }] }, async (rig) => {
    const operationId = await acceptPrompt(rig.lane, "go");
    const driving = rig.lane.drive({ operationId });
    const abort = await raceAtHook(rig, hook, abortFirst, () => rig.lane.requestAbort(operationId));
    const record = settledRecord(await driving);
    return { abort: tag(abort), record: record.status, transcript: rows(rig.lane) };
  });
}

/**
 * The marker and before_run's outcome: the hook's start commit (placing what it injects) reaches the
 * line before or after the marker.
 */
async function abortVsBeforeRun(abortFirst: boolean) {
  return race({ steps: [{ text: "answer" }] }, async (rig) => {
    const held = latch();
    rig.harness.hooks.on("before_run", async () => {
      await held.wait();
      return { messages: [{ role: "user", content: "injected", timestamp: 1 }] };
    });
    const operationId = await acceptPrompt(rig.lane, "go");
    const driving = rig.lane.drive({ operationId });
    await held.entered;
    await rig.line.hold();
    const abort = () => rig.lane.requestAbort(operationId);
    const early = abortFirst ? abort() : undefined;
    if (early) await rig.line.arrived(1, "the marker on the line");
    held.open();
    await rig.line.arrived(abortFirst ? 2 : 1, "the start commit on the line");
    const answer = early ?? abort();
    rig.line.release();
    const record = settledRecord(await driving);
    return { abort: tag(await answer), record: record.status, transcript: rows(rig.lane) };
  });
}

/** setModel lands while the run is in before_run (before its request) or after the request's settlement. */
async function setModelVsGeneration(setModelFirst: boolean) {
  return race({ steps: [{ text: "scripted answer" }] }, async (rig) => {
    const operationId = await acceptPrompt(rig.lane, "go");
    const driving = rig.lane.drive({ operationId });
    if (setModelFirst) {
      const held = latch();
      rig.harness.hooks.on("before_run", () => held.wait());
      await held.entered;
      await rig.lane.setModel(ECHO);
      held.open();
    } else {
      await raceAtHook(rig, "after_response", true, () => rig.lane.setModel(ECHO));
    }
    settledRecord(await driving);
    const answer = rig.lane.findEntry({ order: "newestFirst" });
    const model = answer?.type === "message" && answer.message.role === "assistant" ? answer.message.model : undefined;
    return { answeredBy: model, laneModel: rig.lane.getModel().modelId };
  });
}

/** A navigation's commit and the abort marker, in either order on the line. */
async function abortVsStructural(abortFirst: boolean) {
  return race({ steps: [{ text: "one" }] }, async ({ lane, line }) => {
    settledRecord(await lane.drive({ operationId: await acceptPrompt(lane, "go") }));
    const [first] = lane.findEntries({ order: "oldestFirst" });
    if (!first) throw new Error("no entry");
    const accepted = await lane.accept({ kind: "navigation", targetId: first.id });
    if (!accepted.ok) throw new Error("navigation refused");
    const { operationId } = accepted.value;
    const tipBefore = lane.getTipId();
    await line.hold();
    const abort = () => lane.requestAbort(operationId);
    const early = abortFirst ? abort() : undefined;
    if (early) await line.arrived(1, "the marker on the line");
    const driving = lane.drive({ operationId });
    await line.arrived(abortFirst ? 2 : 1, "the navigation commit on the line");
    const answer = early ?? abort();
    line.release();
    const record = settledRecord(await driving);
    return { abort: tag(await answer), record: record.status, moved: lane.getTipId() !== tipBefore, tipIsTarget: lane.getTipId() === first.id };
  });
}

/**
 * Abort drain vs transport loss: the harness (the process, and with it the caller's answer) is lost
 * just after the marker committed, or before the marker reached the line. Drained payloads live only
 * in the answer and the operation_abort event (§4.4: an accepted tradeoff).
 */
async function drainVsLoss(markerFirst: boolean) {
  return race({ steps: [{ text: "answer" }] }, async (rig) => {
    const held = latch();
    rig.harness.hooks.on("before_run", () => held.wait());
    const operationId = await acceptPrompt(rig.lane, "go");
    rig.lane.drive({ operationId }).catch(() => undefined);
    await held.entered;
    const steer = await rig.lane.steer("steered");
    if (!steer.ok) throw new Error("not queued");
    const seen: HarnessEvent[] = [];
    rig.harness.events.on("operation_abort", (event) => void seen.push(event));
    const abort = markerFirst ? await rig.lane.requestAbort(operationId) : undefined;
    if (abort) await rig.harness.events.emitBatch([]);
    await rig.harness.close();
    const late = abort ?? (await rig.lane.requestAbort(operationId));
    const drainedInEvent = seen.flatMap((event) => (event.type === "operation_abort" ? event.steer : []));
    const { lane } = await rig.reopen();
    const queuedAfterLoss = lane.state.inbox.map((item) => item.kind);
    const record = settledRecord(await lane.drive({ operationId }));
    return {
      abort: tag(late),
      drainedInAnswer: late.ok ? late.value.steer.map(textOfMessage) : [],
      drainedInEvent: drainedInEvent.map(textOfMessage),
      queuedAfterLoss,
      record: record.status,
      transcript: rows(lane),
    };
  });
}

/**
 * Close vs settlement: the settlement commit is on the line before the close seals the harness, or
 * the close comes first and the settlement finds the harness closed. Either way the reopened
 * harness sees exactly what committed (§4.7): a record, or the operation still open at its
 * effect_pending leaf, which a drive recovers (unknown outcome, then a retry).
 */
async function closeVsSettlement(settlementFirst: boolean) {
  const settings = { retry: { enabled: true, maxRetries: 1, baseDelayMs: 1 } };
  return race({ steps: [{ text: "answer" }, { text: "retried" }], settings }, async (rig) => {
    const operationId = await acceptPrompt(rig.lane, "go");
    const driving = rig.lane.drive({ operationId }).then(
      (result) => (result.ok ? "settled" : result.error.code),
      (error: unknown) => (error instanceof Error ? error.name : String(error)),
    );
    const held = latch();
    rig.harness.hooks.on("after_response", () => held.wait());
    await held.entered;
    let closing: Promise<void>;
    if (settlementFirst) {
      await rig.line.hold();
      held.open();
      await rig.line.arrived(1, "the settlement on the line");
      closing = rig.harness.close();
      rig.line.release();
    } else {
      closing = rig.harness.close();
      held.open();
    }
    await closing;
    const firstPass = await driving;
    const reopened = await rig.reopen();
    const restored = reopened.lane.state.operation?.state.at ?? null;
    const record = settledRecord(await reopened.lane.drive({ operationId, waitForRetry: true }));
    return { firstPass, restored, record: record.status, transcript: rows(reopened.lane) };
  });
}

export const abortRaces: RaceEntry[] = [
  {
    name: "requestAbort vs settlement",
    orders: [
      ran("the marker before the settlement commit", "the response settles as aborted and the run ends aborted (one record)", () => abortVsCommit("after_response", true), {
        abort: "ok",
        record: "aborted",
        transcript: ["user: go", "assistant(aborted): answer"],
      }),
      ran("the settlement commit before the marker", "the run completed in that commit; the late requestAbort is OperationMismatch and writes nothing", () => abortVsCommit("after_response", false), {
        abort: "OperationMismatch",
        record: "completed",
        transcript: ["user: go", "assistant: answer"],
      }),
    ],
  },
  {
    name: "abort vs before_run_end",
    orders: [
      ran("the marker while before_run_end awaits", "the finish is not committed: the run ends aborted", () => abortVsCommit("before_run_end", true), {
        abort: "ok",
        record: "aborted",
        transcript: ["user: go", "assistant: answer"],
      }),
      ran("the finish commit before the marker", "the run completed; the late requestAbort is OperationMismatch", () => abortVsCommit("before_run_end", false), {
        abort: "OperationMismatch",
        record: "completed",
        transcript: ["user: go", "assistant: answer"],
      }),
    ],
  },
  {
    name: "requestAbort vs before_drive/before_run",
    orders: [
      ran("the marker while before_run awaits", "its injected messages are dropped (the start is not committed) and the run ends aborted with only the prompt placed; the same for before_drive (drive.test.ts \"a before_drive that rejects because its signal was aborted…\")", () => abortVsBeforeRun(true), {
        abort: "ok",
        record: "aborted",
        transcript: ["user: go"],
      }),
      ran("before_run's start commit before the marker", "the injected message is placed; the marker then ends the run aborted before any request", () => abortVsBeforeRun(false), {
        abort: "ok",
        record: "aborted",
        transcript: ["user: go", "user: injected"],
      }),
    ],
  },
  {
    name: "requestAbort vs effect admission",
    orders: [
      covered("admission first (the stream runs)", "the marker pulls the stream's signal; the partial is stored as aborted", "runtime/abort-gate.test.ts", "cuts the stream, stores the partial assistant as aborted and ends the run aborted"),
      covered("abort first (between the intent and the admission)", "admission is refused; a synthetic aborted response settles under the reserved ids", "runtime/abort-gate.test.ts", "an abort between the request intent and the stream admission settles a synthetic aborted response"),
    ],
  },
  {
    name: "setModel vs generation start",
    orders: [
      ran("setModel before the request intent", "the request is made to the new model", () => setModelVsGeneration(true), { answeredBy: "echo", laneModel: "echo" }),
      ran("setModel after the request intent", "the request in flight keeps its captured model; the lane's model is the new one for later requests", () => setModelVsGeneration(false), {
        answeredBy: "script",
        laneModel: "echo",
      }),
    ],
  },
  {
    name: "abort vs structural commit",
    orders: [
      ran("the marker before the navigation commit", "the navigation ends aborted and moves nothing", () => abortVsStructural(true), {
        abort: "ok",
        record: "aborted",
        moved: false,
        tipIsTarget: false,
      }),
      ran("the navigation commit before the marker", "the tip moved and the navigation completed; the late requestAbort is OperationMismatch", () => abortVsStructural(false), {
        abort: "OperationMismatch",
        record: "completed",
        moved: true,
        tipIsTarget: true,
      }),
    ],
  },
  {
    name: "abort drain vs transport loss",
    orders: [
      ran("the marker commits, then the process (and the answer) is lost", "the steer was drained: it is in the answer and the operation_abort event only, never queued again; the reopened drive ends aborted", () => drainVsLoss(true), {
        abort: "ok",
        drainedInAnswer: ["steered"],
        drainedInEvent: ["steered"],
        queuedAfterLoss: [],
        record: "aborted",
        transcript: ["user: go"],
      }),
      ran("the process is lost before the marker reaches the line", "the request answers Closed and drains nothing: the steer stays queued and the reopened run places and answers it", () => drainVsLoss(false), {
        abort: "Closed",
        drainedInAnswer: [],
        drainedInEvent: [],
        queuedAfterLoss: ["steer"],
        record: "completed",
        transcript: ["user: go", "user: steered", "assistant: answer"],
      }),
    ],
  },
  {
    name: "close vs settlement",
    orders: [
      ran("the settlement commit before the close", "the close lets it finish (admitted before the seal); the reopened harness has the record and nothing open", () => closeVsSettlement(true), {
        firstPass: "settled",
        restored: null,
        record: "completed",
        transcript: ["user: go", "assistant: answer"],
      }),
      ran("the close before the settlement commit", "the settlement is refused (HarnessClosed); the operation is still open at assistant.effect_pending and recovers: the response persisted before after_response is settled as an interrupted error, then a retry answers", () => closeVsSettlement(false), {
        firstPass: "HarnessClosed",
        restored: "assistant.effect_pending",
        record: "completed",
        transcript: ["user: go", "assistant(error): answer", "assistant: retried"],
      }),
    ],
  },
];
