import { expect } from "vitest";
import { UNKNOWN_OUTCOME_MESSAGE } from "../../../harness/runtime/drive/assistant/recover.ts";
import type { ScriptStep } from "../../../models/scripted/steps.ts";
import type { HarnessSettingsPatch } from "../../../schema/settings-patch.ts";
import { baseline, crashAt, settledRecord, shapeOf, until, type Crashed } from "../crash-rig.ts";
import { PLANS, type CellPlan } from "./cells.ts";
import { engineIntent } from "./intents.ts";
import type { IntentName, MatrixCase } from "./table.ts";

// The engine driver of the crash matrix: one reachable case (leaf × position × intent) becomes a
// crashAt scenario (crash-rig.ts): the operation is parked at exactly that point in a real
// Durable Object, every object is killed, a fresh object drives the same operation to its end,
// and the result is compared with the same intent run uninterrupted (baseline), adjusted only by
// the documented recovery of the leaf (reference §4.6, §4.8). Queued input (a nextRun item, and a
// steer in a run) is in flight at the kill; the one invariant checker must find each exactly once.

/** The answer to a steer that asked for one more response than the uninterrupted run made. */
const STEERED = "answer after the steer";

/** The intent's settings with the cell's on top (compaction settings merged field by field). */
function crashSettings(base: HarnessSettingsPatch, cell: HarnessSettingsPatch | undefined): HarnessSettingsPatch {
  if (!cell) return base;
  const compaction = base.compaction || cell.compaction ? { compaction: { ...base.compaction, ...cell.compaction } } : {};
  return { ...base, ...cell, ...compaction };
}

/** The intent's script with the cell's steps inserted (or the step at `at` replaced). */
function withSteps(steps: readonly ScriptStep[], insert: ReturnType<NonNullable<CellPlan["insert"]>> | undefined, which: "crashed" | "baseline"): ScriptStep[] {
  if (!insert) return [...steps];
  return steps.toSpliced(insert.at, insert.replace ? 1 : 0, ...insert[which]);
}

const baselines = new Map<string, ReturnType<typeof baseline>>();

/** Runs one case of the engine driver: the kill, the recovery, the comparison, the invariants. */
export async function runEngineCase(c: MatrixCase): Promise<void> {
  const plan = PLANS[`${c.leaf}/${c.position}`];
  if (!plan) throw new Error(`no plan for ${c.leaf}/${c.position}`);
  const intent = engineIntent(c.intent, c.leaf === "tools" && c.position === "during_effect");
  const insert = plan.insert?.(intent);
  // A run also gets a steer in flight: placed at the run's next boundary, it may ask for one more
  // response than the uninterrupted run (a spare step answers it), which the comparison takes out.
  const steer = intent.responseAt === undefined || intent.noSteer ? undefined : `steer while parked at ${c.leaf} ${c.position}`;
  const steps = [...withSteps(intent.steps, insert, "crashed"), ...(steer ? [{ text: STEERED }] : [])];
  const baselineSteps = withSteps(intent.steps, insert, "baseline");
  const queuedText = `queued while parked at ${c.leaf} ${c.position}`;
  let armed = false;
  let parkedOperation = "";

  const crashed = await crashAt({
    steps,
    settings: crashSettings(intent.settings, plan.settings),
    ...(intent.tools && { tools: intent.tools }),
    ...(plan.clock && { clock: plan.clock }),
    park: (rig, lane) => {
      plan.prepare?.(rig);
      return plan.park({ rig, lane, intent, armed: () => armed });
    },
    accept: async (rig, lane) => {
      await intent.history(rig, lane);
      armed = true;
      parkedOperation = await intent.start(rig, lane);
      (plan.firstPass ?? ((i, l, id) => i.finish(l, id)))(intent, lane, parkedOperation).catch(() => undefined);
      return parkedOperation;
    },
    whileParked: async (rig, lane, operationId) => {
      const parked = lane.state.operation?.state;
      if (!parked) throw new Error(`${c.leaf}: the operation settled before the kill`);
      plan.check?.(parked, { rig }, operationId);
      // Queued input in flight at the kill: the enqueue commits while the pass is parked (its event
      // delivery may wait behind the parked one, so the projection is awaited, not the call).
      void lane.nextRun(queuedText);
      await until(() => lane.state.inbox.some((item) => item.kind === "nextRun"), "the queued input");
      if (steer) {
        void lane.steer(steer);
        await until(() => lane.state.inbox.some((item) => item.kind === "steer"), "the steer");
      }
    },
    reopen: (rig) => plan.prepare?.(rig),
    drive: (lane, operationId) => intent.finish(lane, operationId),
    queued: () => [queuedText, ...(steer ? [steer] : [])],
  });

  expect(crashed.parked?.at).toBe(c.leaf);
  expect(crashed.restored).toEqual(crashed.parked);
  const record = settledRecord(crashed.driven);
  const baselineSettings = crashSettings(intent.settings, plan.settings && { ...plan.settings, retry: intent.settings.retry });
  // Cells that leave the uninterrupted run alike share it (same intent, script, settings, hooks).
  const key = JSON.stringify([c.intent, baselineSteps, baselineSettings, plan.prepare ? `${c.leaf}/${c.position}` : ""]);
  let uninterrupted = baselines.get(key);
  if (!uninterrupted) {
    uninterrupted = baseline({
      steps: baselineSteps,
      settings: baselineSettings,
      ...(intent.tools && { tools: intent.tools }),
      prepare: (rig) => plan.prepare?.(rig),
      accept: async (rig, lane) => {
        await intent.history(rig, lane);
        return intent.start(rig, lane);
      },
      drive: (lane, operationId) => intent.finish(lane, operationId),
    });
    baselines.set(key, uninterrupted);
  }
  const reference = await uninterrupted;
  expect(reference.violations).toEqual([]);
  expect(record).toMatchObject({ operationId: crashed.operationId, kind: reference.record.kind, status: reference.record.status });
  const steered = recoveredShape(crashed, plan, c.intent).filter((entry) => entry.text !== steer && entry.text !== STEERED);
  expect(steered).toEqual(reference.shape);
  expect(crashed.violations).toEqual([]);
}

/**
 * The recovered transcript as an uninterrupted run would have it, after checking and taking out
 * exactly what the documented recovery adds: the synthetic unknown-outcome response (reserved
 * ids, reference §4.6) or a `replay: "never"` call's interruption result (§4.8; none here: the
 * engine's tools are safe, the hosted driver checks never-tools).
 */
function recoveredShape(crashed: Crashed, plan: CellPlan, intent: IntentName) {
  if (plan.recovery !== "unknown-outcome") return crashed.shape;
  const parked = crashed.parked;
  if (parked?.at !== "assistant.effect_pending") throw new Error(`${intent}: not parked at assistant.effect_pending`);
  const synthetic = crashed.transcript.find((entry) => entry.id === parked.responseEntryId);
  expect(synthetic?.type === "message" && synthetic.message.role === "assistant" && synthetic.message).toMatchObject({ stopReason: "error", errorMessage: UNKNOWN_OUTCOME_MESSAGE });
  return shapeOf(crashed.transcript.filter((entry) => entry !== synthetic));
}
