import { uuidv7 } from "@earendil-works/pi-ai/utils/uuid";
import { acceptPrompt, settledRecord } from "../crash-rig.ts";
import { latch, race, raceAcrossKill, rows, tag, type First } from "./rig.ts";
import { covered, ran, type RaceEntry } from "./types.ts";

// Acceptance and the inbox (reference §3.1, §3.7, §4.1): who is admitted, what is placed, what
// stays queued, when two commands meet on the mutation line.

const ANSWER = [{ text: "answer" }];

/** Both prompts are issued while the line is held, `first` first; the loser must write nothing. */
async function promptVsPrompt(first: First) {
  return race({ steps: ANSWER }, async ({ lane, line }) => {
    await line.hold();
    const issue = (prompt: string) => lane.accept({ kind: "prompt", prompt });
    const [early, late] = first === "A" ? ["A", "B"] : ["B", "A"];
    const earlyResult = issue(early);
    await line.arrived(1, "the first acceptance on the line");
    const lateResult = issue(late);
    await line.arrived(2, "the second acceptance on the line");
    line.release();
    const [winner, loser] = [await earlyResult, await lateResult];
    if (!winner.ok) throw new Error("the first acceptance was refused");
    settledRecord(await lane.drive({ operationId: winner.value.operationId }));
    const answerOf = (prompt: string) => tag(prompt === early ? winner : loser);
    return { A: answerOf("A"), B: answerOf("B"), transcript: rows(lane) };
  });
}

/** The kill lands after the accept committed, or while it still waits for the line. */
async function acceptVsCrash(first: "accept" | "crash") {
  return raceAcrossKill(
    { steps: ANSWER },
    async ({ lane, line }) => {
      if (first === "accept") return { operationId: await acceptPrompt(lane, "go") };
      await line.hold();
      lane.accept({ kind: "prompt", prompt: "go" }).catch(() => undefined);
      await line.arrived(1, "the acceptance on the line");
      return { operationId: undefined };
    },
    async ({ lane, open }, { operationId }) => {
      const restored = open.map((operation) => `${operation.kind} at ${lane.state.operation?.state.at ?? "?"}`);
      const record = operationId === undefined ? undefined : settledRecord(await lane.drive({ operationId })).status;
      return { restored, record, transcript: rows(lane) };
    },
  );
}

/** A stale id (a settled operation's) is aborted just before or just after a new acceptance. */
async function staleVsCurrent(first: "stale" | "current") {
  return race({ steps: [{ text: "old" }, { text: "new" }] }, async ({ lane, line }) => {
    const stale = await acceptPrompt(lane, "old");
    settledRecord(await lane.drive({ operationId: stale }));
    const unknown = uuidv7();
    await line.hold();
    const abortStale = () => Promise.all([lane.requestAbort(stale), lane.requestAbort(unknown)]);
    const acceptNew = () => lane.accept({ kind: "prompt", prompt: "new" });
    const aborts = first === "stale" ? abortStale() : undefined;
    if (aborts) await line.arrived(2, "the stale aborts on the line");
    const accepted = acceptNew();
    await line.arrived(first === "stale" ? 3 : 1, "the acceptance on the line");
    const lateAborts = aborts ?? abortStale();
    line.release();
    const [staleAbort, unknownAbort] = await lateAborts;
    const admitted = await accepted;
    if (!admitted.ok) throw new Error("the new prompt was refused");
    const record = settledRecord(await lane.drive({ operationId: admitted.value.operationId }));
    return { staleAbort: tag(staleAbort), unknownAbort: tag(unknownAbort), current: record.status, transcript: rows(lane) };
  });
}

/** A nextRun item enqueued just before or just after an acceptance. */
async function nextRunVsAcceptance(first: "nextRun" | "acceptance") {
  return race({ steps: ANSWER }, async ({ lane, line }) => {
    await line.hold();
    const enqueue = () => lane.nextRun("queued");
    const accept = () => lane.accept({ kind: "prompt", prompt: "go" });
    const one = first === "nextRun" ? enqueue() : accept();
    await line.arrived(1, "the first command on the line");
    const two = first === "nextRun" ? accept() : enqueue();
    await line.arrived(2, "the second command on the line");
    line.release();
    await Promise.all([one, two]);
    const admitted = first === "nextRun" ? await two : await one;
    if (!admitted.ok || !("operationId" in admitted.value)) throw new Error("not accepted");
    settledRecord(await lane.drive({ operationId: admitted.value.operationId }));
    return { transcript: rows(lane), queued: lane.state.inbox.map((item) => item.kind) };
  });
}

/**
 * A follow-up queued during the run is cancelled just before or just after the settlement commit
 * that consumes it (the final answer's boundary rides with the settlement). The run is held in
 * after_response, the last point before that commit.
 */
async function cancelVsConsumption(first: "cancel" | "consumption") {
  return race({ steps: [{ text: "first" }, { text: "second" }] }, async ({ harness, lane, line }) => {
    const held = latch();
    harness.hooks.on("after_response", () => held.wait());
    const operationId = await acceptPrompt(lane, "go");
    const driving = lane.drive({ operationId });
    await held.entered;
    const queued = await lane.followUp("more");
    if (!queued.ok) throw new Error("not queued");
    await line.hold();
    const cancel = () => lane.cancelQueued(queued.value.entryId);
    const cancelled = first === "cancel" ? cancel() : undefined;
    if (cancelled) await line.arrived(1, "the cancellation on the line");
    held.open();
    await line.arrived(first === "cancel" ? 2 : 1, "the settlement on the line");
    const answer = cancelled ?? cancel();
    line.release();
    const result = await answer;
    const record = settledRecord(await driving);
    return { cancel: result.ok ? result.value.kind : result.error.code, record: record.status, transcript: rows(lane) };
  });
}

/** A write queued on a busy lane (a deferred write) just before or just after the abort marker. */
async function deferredWriteVsAbort(first: "write" | "abort") {
  return race({ steps: [{ text: "answer" }, { text: "next" }] }, async ({ harness, lane, line }) => {
    const held = latch();
    harness.hooks.on("before_run", () => held.wait());
    const operationId = await acceptPrompt(lane, "go");
    const driving = lane.drive({ operationId });
    await held.entered;
    await line.hold();
    const write = () => lane.appendCustomEntry("note", { text: "written" });
    const abort = () => lane.requestAbort(operationId);
    const one = first === "write" ? write() : abort();
    await line.arrived(1, "the first command on the line");
    const two = first === "write" ? abort() : write();
    await line.arrived(2, "the second command on the line");
    line.release();
    const [written, aborted] = first === "write" ? [await one, await two] : [await two, await one];
    held.open();
    const record = settledRecord(await driving);
    const queuedAfterTerminal = lane.state.inbox.map((item) => item.kind);
    const next = await acceptPrompt(lane, "again");
    settledRecord(await lane.drive({ operationId: next }));
    const drained = aborted.ok && "steer" in aborted.value ? aborted.value.steer.length + aborted.value.followUp.length : -1;
    return { written: written.ok && "placed" in written.value ? written.value.placed : "refused", drained, record: record.status, queuedAfterTerminal, transcript: rows(lane) };
  });
}

export const acceptanceRaces: RaceEntry[] = [
  {
    name: "prompt vs prompt",
    orders: [
      ran("A's acceptance first", "A is accepted and runs; B is LaneBusy and writes nothing", () => promptVsPrompt("A"), {
        A: "ok",
        B: "LaneBusy",
        transcript: ["user: A", "assistant: answer"],
      }),
      ran("B's acceptance first", "B is accepted and runs; A is LaneBusy and writes nothing", () => promptVsPrompt("B"), {
        A: "LaneBusy",
        B: "ok",
        transcript: ["user: B", "assistant: answer"],
      }),
    ],
  },
  {
    name: "accept vs crash before drive",
    orders: [
      ran("acceptance commits, then the kill", "the fresh object lists the operation at starting; a drive completes it", () => acceptVsCrash("accept"), {
        restored: ["run at starting"],
        record: "completed",
        transcript: ["user: go", "assistant: answer"],
      }),
      ran("the kill, before the acceptance commits", "nothing was written: no open operation, no entry", () => acceptVsCrash("crash"), {
        restored: [],
        record: undefined,
        transcript: [],
      }),
    ],
  },
  {
    name: "drive vs drive (join)",
    orders: [
      covered("the second drive while the first pass is live", "it joins the one pass (before_drive once, one record)", "runtime/drive.test.ts", "concurrent drives of the current id join one pass: before_drive runs once, joiner options are ignored"),
      covered("the second drive after the pass settled", "it answers {settled, record}, also from a re-created harness", "runtime/drive.test.ts", "a settled id answers {settled, record}, also from a harness re-created on the same session"),
    ],
  },
  {
    name: "stale id vs current",
    orders: [
      ran("the stale requestAbort before the new acceptance", "OperationMismatch (also for an unknown id); the new run is untouched and completes", () => staleVsCurrent("stale"), {
        staleAbort: "OperationMismatch",
        unknownAbort: "OperationMismatch",
        current: "completed",
        transcript: ["user: old", "assistant: old", "user: new", "assistant: new"],
      }),
      ran("the new acceptance before the stale requestAbort", "OperationMismatch naming the current operation; no marker on it; it completes", () => staleVsCurrent("current"), {
        staleAbort: "OperationMismatch",
        unknownAbort: "OperationMismatch",
        current: "completed",
        transcript: ["user: old", "assistant: old", "user: new", "assistant: new"],
      }),
    ],
  },
  {
    name: "nextRun vs acceptance",
    orders: [
      ran("nextRun enqueued first", "the acceptance places it before its prompt, in one commit", () => nextRunVsAcceptance("nextRun"), {
        transcript: ["user: queued", "user: go", "assistant: answer"],
        queued: [],
      }),
      ran("acceptance first", "the item is never consumed mid-run: it stays queued after the run", () => nextRunVsAcceptance("acceptance"), {
        transcript: ["user: go", "assistant: answer"],
        queued: ["nextRun"],
      }),
    ],
  },
  {
    name: "cancelQueued vs consumption",
    orders: [
      ran("cancelQueued before the consuming commit", "cancelled; the follow-up is never placed; the run completes after one answer", () => cancelVsConsumption("cancel"), {
        cancel: "cancelled",
        record: "completed",
        transcript: ["user: go", "assistant: first"],
      }),
      ran("the consuming commit first", "already_consumed; the follow-up is placed and answered", () => cancelVsConsumption("consumption"), {
        cancel: "already_consumed",
        record: "completed",
        transcript: ["user: go", "assistant: first", "user: more", "assistant: second"],
      }),
    ],
  },
  {
    name: "deferred write vs abort",
    orders: [
      ran("the write queued before the marker", "the marker does not drain it; it stays queued through the aborted terminal and the next acceptance places it", () => deferredWriteVsAbort("write"), {
        written: false,
        drained: 0,
        record: "aborted",
        queuedAfterTerminal: ["write"],
        transcript: ["user: go", "custom", "user: again", "assistant: answer"],
      }),
      ran("the marker before the write", "the write is still admitted and queued, kept through the terminal, placed by the next acceptance", () => deferredWriteVsAbort("abort"), {
        written: false,
        drained: 0,
        record: "aborted",
        queuedAfterTerminal: ["write"],
        transcript: ["user: go", "custom", "user: again", "assistant: answer"],
      }),
    ],
  },
  {
    name: "structural A terminal vs continuation B",
    orders: [
      covered("input queued while A is in flight", "the continuation run B takes it (steer, followUp and nextRun alike; the order \"during A\")", "runtime/continuation.test.ts", "a %s queued ${order} is taken by the continuation run"),
      covered("input queued after A's terminal commit, before B's acceptance", "B's acceptance takes it all the same (the order \"after A's commit\")", "runtime/continuation.test.ts", "a %s queued ${order} is taken by the continuation run"),
    ],
  },
];
