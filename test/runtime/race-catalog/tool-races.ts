import { ProgressWriter } from "../../../harness/runtime/drive/progress.ts";
import { pendingAssistantFrames } from "../../../harness/session/builtin-addresses.ts";
import { appendList } from "../../../harness/session/writes.ts";
import type { ScriptStep } from "../../../models/scripted/steps.ts";
import { acceptPrompt, settledRecord, until } from "../crash-rig.ts";
import { gate, testTools, text, type TestToolSpec } from "../tool-helpers.ts";
import { latch, race, rows, tag, type RaceRig } from "./rig.ts";
import { ran, type RaceEntry } from "./types.ts";

// The tools leaf and the progress writes of a live pass (reference §4.8, §3.3 frames and
// checkpoints): staging, placement, checkpoints and frames against each other and against abort.

const calls = (...names: string[]): ScriptStep => ({ toolCalls: names.map((name, index) => ({ name, arguments: { n: index } })) });

function toolRace<T>(specs: Record<string, TestToolSpec>, steps: ScriptStep[], body: (rig: RaceRig, operationId: string, driving: ReturnType<RaceRig["lane"]["drive"]>) => Promise<T>) {
  return race({ steps, tools: testTools(specs), activeTools: Object.keys(specs) }, async (rig) => {
    const operationId = await acceptPrompt(rig.lane, "go");
    return body(rig, operationId, rig.lane.drive({ operationId }));
  });
}

const started = (rig: RaceRig, tool: string) => until(() => rig.events.some((event) => event.type === "tool_start" && event.toolName === tool), `${tool} to start`);

/** A running tool that honours its signal: the abort marker and its staging, in either order. */
async function abortVsStaging(stagingFirst: boolean) {
  const finish = gate();
  const specs: Record<string, TestToolSpec> = {
    work: {
      run: (_args, { signal }) =>
        new Promise((resolve, reject) => {
          void finish.promise.then(() => resolve(text("work done")));
          signal.addEventListener("abort", () => reject(new Error("stopped by abort")), { once: true });
        }),
    },
  };
  return toolRace(specs, [calls("work"), { text: "never asked" }], async (rig, operationId, driving) => {
    await started(rig, "work");
    await rig.line.hold();
    let abort: ReturnType<RaceRig["lane"]["requestAbort"]>;
    if (stagingFirst) {
      finish.open();
      await rig.line.arrived(1, "the staging on the line");
      abort = rig.lane.requestAbort(operationId);
    } else {
      abort = rig.lane.requestAbort(operationId);
      await rig.line.arrived(1, "the marker on the line");
    }
    rig.line.release();
    const answer = await abort;
    return { abort: tag(answer), record: settledRecord(await driving).status, transcript: rows(rig.lane) };
  });
}

/** Two parallel calls; the later call B stages before or after the earlier call A. */
async function laterVsEarlier(laterFirst: boolean) {
  const a = gate();
  const b = gate();
  const specs: Record<string, TestToolSpec> = {
    A: { run: async () => (await a.promise, text("A done")) },
    B: { run: async () => (await b.promise, text("B done")) },
  };
  return toolRace(specs, [calls("A", "B"), { text: "after tools" }], async (rig, _operationId, driving) => {
    await started(rig, "B");
    await rig.line.hold();
    const [first, second] = laterFirst ? [b, a] : [a, b];
    first.open();
    await rig.line.arrived(1, "the first staging on the line");
    second.open();
    await rig.line.arrived(2, "the second staging on the line");
    rig.line.release();
    const record = settledRecord(await driving);
    const staged = rig.events.flatMap((event) => (event.type === "tool_end" ? [event.toolName] : []));
    return { staged, record: record.status, transcript: rows(rig.lane) };
  });
}

/** A tool's checkpoint update reaches the line before or after its outcome's staging. */
async function checkpointVsSettlement(checkpointFirst: boolean) {
  const finish = gate();
  let checkpoint: (() => void) | undefined;
  const specs: Record<string, TestToolSpec> = {
    chatty: {
      run: async (_args, { onUpdate }) => {
        checkpoint = () => onUpdate(text("half way"), { checkpoint: true });
        await finish.promise;
        return text("chatty done");
      },
    },
  };
  return toolRace(specs, [calls("chatty"), { text: "ok" }], async (rig, _operationId, driving) => {
    await started(rig, "chatty");
    await until(() => checkpoint !== undefined, "the tool to run");
    await rig.line.hold();
    if (checkpointFirst) {
      // The staging waits for the pass's earlier progress writes, so it queues behind the checkpoint.
      checkpoint?.();
      await rig.line.arrived(1, "the checkpoint on the line");
      finish.open();
    } else {
      finish.open();
      await rig.line.arrived(1, "the staging on the line");
      checkpoint?.();
    }
    rig.line.release();
    const record = settledRecord(await driving);
    const updates = rig.events.filter((event) => event.type === "tool_update").length;
    return { updates, record: record.status, transcript: rows(rig.lane) };
  });
}

/**
 * A progress frame of the live response and the response's settlement: the frame commits first
 * (and the settlement deletes the list) or after it (fenced: it writes nothing).
 */
async function frameVsSettlement(frameFirst: boolean) {
  return race({ steps: [{ text: "answer" }] }, async (rig) => {
    const held = latch();
    rig.harness.hooks.on("after_response", () => held.wait());
    const operationId = await acceptPrompt(rig.lane, "go");
    const driving = rig.lane.drive({ operationId });
    await held.entered;
    const state = rig.lane.state.operation?.state;
    if (state?.at !== "assistant.effect_pending") throw new Error(`not effect_pending: ${state?.at}`);
    const frames = pendingAssistantFrames(operationId, state.responseEntryId);
    const core = { session: rig.session, assertUnfaulted: () => {}, fault: (error: unknown) => (error instanceof Error ? error : new Error(String(error))) };
    const writer = new ProgressWriter({ core, lane: rig.lane, operationId, gate: { closeSignal: new AbortController().signal } }, (leaf) => leaf.at === "assistant.effect_pending");
    const before = rig.session.readList(frames).length;
    await rig.line.hold();
    const frame = () => writer.write([appendList(frames, { k: "delta", blocks: [] })]);
    if (frameFirst) frame();
    held.open();
    await rig.line.arrived(1, "the first write on the line");
    if (!frameFirst) frame();
    await rig.line.arrived(2, "both writes on the line");
    rig.line.release();
    await writer.flushed();
    const record = settledRecord(await driving);
    return { fenced: writer.fenced, framesAfter: rig.session.readList(frames).length - before, record: record.status, transcript: rows(rig.lane) };
  });
}

export const toolRaces: RaceEntry[] = [
  {
    name: "abort vs tool staging",
    orders: [
      ran("the tool's outcome stages before the marker", "its real result is kept and placed; no further turn; the run ends aborted", () => abortVsStaging(true), {
        abort: "ok",
        record: "aborted",
        transcript: ["user: go", "assistant(toolUse): [call work]", "toolResult: work done"],
      }),
      ran("the marker before the staging", "the tool's signal is pulled; its error result is staged and placed; the run ends aborted", () => abortVsStaging(false), {
        abort: "ok",
        record: "aborted",
        transcript: ["user: go", "assistant(toolUse): [call work]", "toolResult(error): stopped by abort"],
      }),
    ],
  },
  {
    name: "checkpoint vs tool settlement",
    orders: [
      ran("the checkpoint before the staging", "it commits (one tool_update) and the staging deletes it: nothing is left", () => checkpointVsSettlement(true), {
        updates: 1,
        record: "completed",
        transcript: ["user: go", "assistant(toolUse): [call chatty]", "toolResult: chatty done", "assistant: ok"],
      }),
      ran("the staging before the checkpoint", "the checkpoint is fenced: nothing stored, no tool_update", () => checkpointVsSettlement(false), {
        updates: 0,
        record: "completed",
        transcript: ["user: go", "assistant(toolUse): [call chatty]", "toolResult: chatty done", "assistant: ok"],
      }),
    ],
  },
  {
    name: "frame append vs settlement",
    orders: [
      ran("the frame before the settlement", "the frame commits; the settlement deletes the frame list in its own commit", () => frameVsSettlement(true), {
        fenced: 0,
        framesAfter: -1,
        record: "completed",
        transcript: ["user: go", "assistant: answer"],
      }),
      ran("the settlement before the frame", "the frame is fenced and writes nothing", () => frameVsSettlement(false), {
        fenced: 1,
        framesAfter: -1,
        record: "completed",
        transcript: ["user: go", "assistant: answer"],
      }),
    ],
  },
  {
    name: "later tool B vs earlier A",
    orders: [
      ran("A stages first", "staged A, B; placed in source order A, B", () => laterVsEarlier(false), {
        staged: ["A", "B"],
        record: "completed",
        transcript: ["user: go", "assistant(toolUse): [call A][call B]", "toolResult: A done", "toolResult: B done", "assistant: after tools"],
      }),
      ran("the later call B stages first", "staged B, A (B waits settled-but-unplaced); placed in source order A, B all the same", () => laterVsEarlier(true), {
        staged: ["B", "A"],
        record: "completed",
        transcript: ["user: go", "assistant(toolUse): [call A][call B]", "toolResult: A done", "toolResult: B done", "assistant: after tools"],
      }),
    ],
  },
];
