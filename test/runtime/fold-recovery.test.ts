import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { pendingAssistantFrames } from "../../harness/session/builtin-addresses.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { LaneSnapshot } from "../../schema/lane.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import { createSession, sessionStub } from "../helpers/sessions.ts";
import { objectInvariants } from "./invariants.ts";
import { acceptPrompt, attach, never, settledRecord, startPass, until, type Attached } from "./crash-rig.ts";
import { foldAndCapture, foldEvents, openWatched } from "./watch-fold.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";

// Fold equivalence across a real kill (reference §5.4 "reattaching mid-stream", "settled-but-
// unplaced tools"): a watch on the fresh object starts from a snapshot rebuilt from durable state
// (frames, staged outcomes), and folding it over the recovery's events must still equal a later
// snapshot.

const LONG = Array.from({ length: 300 }, (_, i) => `y${i}`).join(" ");

/** Runs `first` in a fresh object, kills every object, then runs `second` in the fresh one. */
async function acrossKill<A, B>(
  steps: ScriptStep[],
  settings: HarnessSettingsPatch,
  first: (rig: Attached, lane: AgentLane) => Promise<A>,
  second: (rig: Attached, lane: AgentLane, before: A, advance: (ms: number) => void, violations: () => string[]) => Promise<B>,
): Promise<B> {
  const { name, stub } = await createSession("fold-kill");
  const before = await runInDurableObject(stub, async (instance: SessionObject) => {
    await appendScriptSteps(instance.session(), steps);
    const rig = await attach(instance);
    await rig.harness.updateSettings(settings);
    return first(rig, await rig.harness.lane("main"));
  });
  await abortAllDurableObjects();
  return runInDurableObject(sessionStub(name), async (instance: SessionObject, state) => {
    let offset = 0;
    const rig = await attach(instance, { clock: () => Date.now() + offset });
    const lane = rig.harness.getLane("main");
    if (!lane) throw new Error("lane not restored");
    return second(rig, lane, before, (ms) => void (offset += ms), () => objectInvariants(instance, state));
  });
}

describe("fold equivalence across a kill", () => {
  it("a watch reattached mid-stream (partial from committed frames) folds through recovery, the retry wait and the next attempt", async () => {
    await acrossKill(
      [{ text: LONG, chunkMs: 3 }, { text: "fresh attempt" }],
      { retry: { enabled: true, maxRetries: 2, baseDelayMs: 60_000 } },
      async (rig, lane) => {
        const operationId = await acceptPrompt(lane, "stream");
        startPass(lane, operationId);
        await until(() => {
          const state = lane.state.operation?.state;
          return state?.at === "assistant.effect_pending" && rig.session.readList(pendingAssistantFrames(operationId, state.responseEntryId)).length >= 2;
        }, "committed frames");
        return operationId;
      },
      async (rig, lane, operationId, advance, violations) => {
        const watched = await openWatched(lane);
        // The restored partial is shown as streaming, never in the transcript.
        expect(watched.captured.operation?.streamingMessage?.content.length).toBe(1);
        expect(watched.captured.transcript.map((entry) => entry.type === "message" && entry.message.role)).toEqual(["user"]);
        const waiting = await lane.drive({ operationId, waitForRetry: false });
        expect(waiting.ok && waiting.value.kind).toBe("waiting");
        let { folded, fresh } = await foldAndCapture(rig.harness, lane, watched);
        expect(fresh.operation?.streamingMessage).toBeUndefined();
        expect(folded).toStrictEqual(fresh);
        advance(61_000);
        expect(settledRecord(await lane.drive({ operationId, waitForRetry: false })).status).toBe("completed");
        ({ folded, fresh } = await foldAndCapture(rig.harness, lane, watched));
        expect(folded).toStrictEqual(fresh);
        expect(watched.watch.snapshot).toStrictEqual(watched.captured);
        expect(violations()).toEqual([]);
      },
    );
  });

  it("settled-but-unplaced tools: the fresh object's capture equals the fold of the dead object's watch, then folds to the end", async () => {
    await acrossKill(
      [{ toolCalls: [{ name: "lookup", arguments: { q: "k" } }] }, { text: "after tools" }],
      {},
      async (rig, lane): Promise<LaneSnapshot> => {
        const watched = await openWatched(lane);
        rig.harness.events.on("tool_end", () => never());
        const operationId = await acceptPrompt(lane, "tools");
        startPass(lane, operationId);
        await until(() => watched.events.some((event) => event.type === "tool_end"), "tool_end");
        return foldEvents(watched.watch.snapshot, watched.events);
      },
      async (rig, lane, foldedBeforeKill, _advance, violations) => {
        const watched = await openWatched(lane);
        expect(watched.captured.operation?.runningTools).toMatchObject([{ status: "settled", toolName: "lookup", args: { q: "k" } }]);
        expect(watched.captured).toStrictEqual(foldedBeforeKill);
        const operationId = lane.state.operation?.meta.operationId ?? "";
        expect(settledRecord(await lane.drive({ operationId })).status).toBe("completed");
        const { folded, fresh } = await foldAndCapture(rig.harness, lane, watched);
        expect(folded).toStrictEqual(fresh);
        expect(violations()).toEqual([]);
      },
    );
  });
});
