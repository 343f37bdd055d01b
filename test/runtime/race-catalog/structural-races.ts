import type { ScriptStep } from "../../../models/scripted/steps.ts";
import type { HarnessSettingsPatch } from "../../../schema/settings-patch.ts";
import { acceptPrompt, settledRecord } from "../crash-rig.ts";
import { latch, race, rows } from "./rig.ts";
import { ran, type RaceEntry } from "./types.ts";

// A structural boundary inside a run (reference §3.6 step 1, §6.1: the threshold compaction's
// publication commit) against queued input: a steer queued while the compaction is in flight is
// placed by the publication commit itself; one queued after it is left for a later acceptance when
// that commit also finished the run.

/** Compact when the context passes 50 tokens; keep the last two one-token messages. */
const THRESHOLD: HarnessSettingsPatch = {
  compaction: { enabled: true, reserveTokens: 128_000 - 50, keepRecentTokens: 2 },
  retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 },
};
const small = (text: string): ScriptStep => ({ text, usage: { input: 10, output: 1 } });
const big = (text: string): ScriptStep => ({ text, usage: { input: 100, output: 1 } });

async function boundaryVsQueuedInput(steerFirst: boolean) {
  const steps = [small("a"), big("b"), { text: "SUMMARY" }, small("after summary"), small("steered")];
  return race({ steps, settings: THRESHOLD }, async (rig) => {
    settledRecord(await rig.lane.drive({ operationId: await acceptPrompt(rig.lane, "one") }));
    const seen = rig.events.length;
    const held = latch();
    rig.harness.hooks.on("before_compaction", async () => {
      await held.wait();
      return {};
    });
    const operationId = await acceptPrompt(rig.lane, "two");
    const driving = rig.lane.drive({ operationId, waitForRetry: true });
    await held.entered;
    let steered: Promise<unknown> | undefined;
    if (steerFirst) await rig.lane.steer("steer now");
    else {
      // Queued from the publication's own event: after its commit, before the run's next one.
      const off = rig.harness.events.on("compaction_end", () => {
        off();
        steered = rig.lane.steer("steer now");
      });
    }
    held.open();
    const record = settledRecord(await driving);
    await steered;
    const transcript = rows(rig.lane);
    return { record: record.status, afterCompaction: transcript.slice(transcript.indexOf("compaction")), queued: rig.lane.state.inbox.map((item) => item.kind), order: rig.events.slice(seen).flatMap((event) => (["compaction_end", "queue_update", "run_end"].includes(event.type) ? [event.type] : [])) };
  });
}

export const structuralRaces: RaceEntry[] = [
  {
    name: "structural boundary vs queued input",
    orders: [
      ran("the steer queued before the publication commit", "placed by that commit, right after the summary entry; the run takes another turn and answers it", () => boundaryVsQueuedInput(true), {
        record: "completed",
        afterCompaction: ["compaction", "user: steer now", "assistant: after summary"],
        queued: [],
        order: ["queue_update", "compaction_end", "queue_update", "run_end"],
      }),
      ran("the publication commit first", "the run's answer was final, so it ends with the publication (run_end before the steer's queue_update): the steer is not placed and stays queued for the next acceptance, never lost", () => boundaryVsQueuedInput(false), {
        record: "completed",
        afterCompaction: ["compaction"],
        queued: ["steer"],
        order: ["compaction_end", "run_end", "queue_update"],
      }),
    ],
  },
];
