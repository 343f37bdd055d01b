import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { UNKNOWN_OUTCOME_MESSAGE } from "../../harness/runtime/drive/assistant/recover.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import { appendScriptSteps } from "../../models/scripted/script-source.ts";
import { createSession, sessionStub } from "../helpers/sessions.ts";
import { attach, shapeOf, stepsTaken, transcriptOf, type Attached } from "./crash-rig.ts";
import { settledRecord, unwrap } from "./drive-helpers.ts";
import { objectInvariants } from "./invariants.ts";

// A run accepted by a caller that drives it at once carries its first request intent in its
// acceptance commit (harness/runtime/first-request.ts): one commit and one lane state row fewer
// per turn (bench P2 and P12 count them), with the outcome of committing the intent right after the acceptance. Where a hook,
// queued input or a threshold compaction would act between the two, the run starts the ordinary way.

const RETRY_NOW = { retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 } };

async function withLane<T>(steps: Parameters<typeof appendScriptSteps>[1], body: (rig: Attached, lane: AgentLane, instance: SessionObject, state: DurableObjectState) => Promise<T>): Promise<T> {
  const { stub } = await createSession("first-request");
  return runInDurableObject(stub, async (instance: SessionObject, state) => {
    await appendScriptSteps(instance.session(), steps);
    const rig = await attach(instance);
    return body(rig, await rig.harness.lane("main"), instance, state);
  });
}

describe("a run driven at once: its acceptance carries the first request intent", () => {
  it("accepts at the request intent, sends it from this process's pass, and answers as the ordinary start does", async () => {
    await withLane([{ text: "hello back" }], async (rig, lane, instance, state) => {
      const admission = unwrap(await lane.accept({ kind: "prompt", prompt: "hello" }, { drivenAtOnce: true }));
      expect(lane.state.operation?.state.at).toBe("assistant.effect_pending");
      expect(stepsTaken(rig.session)).toBe(0);
      expect(rig.events.map((event) => event.type).filter((type) => type !== "lane_created")).toEqual(["run_start", "message_start", "message_end", "entry_added", "stats", "turn_start"]);
      const record = settledRecord(await lane.drive({ operationId: admission.operationId, waitForRetry: true }));
      expect(record.status).toBe("completed");
      expect(shapeOf(transcriptOf(lane))).toEqual([
        { role: "user", text: "hello" },
        { role: "assistant", stopReason: "stop", text: "hello back" },
      ]);
      expect(stepsTaken(rig.session)).toBe(1);
      expect(objectInvariants(instance, state)).toEqual([]);
    });
  });

  it("starts the ordinary way when a hook runs before the intent: the hook sees the run once", async () => {
    await withLane([{ text: "answer" }], async (rig, lane) => {
      const seen: string[] = [];
      rig.harness.hooks.on("before_run", (event) => {
        seen.push(event.runId);
        return undefined;
      });
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hi" }, { drivenAtOnce: true }));
      expect(lane.state.operation?.state.at).toBe("starting");
      expect(settledRecord(await lane.drive({ operationId, waitForRetry: true })).status).toBe("completed");
      expect(seen).toEqual([operationId]);
    });
  });

  it("starts the ordinary way when input is queued: the start places what its boundary takes", async () => {
    await withLane([{ text: "answer" }], async (rig, lane) => {
      await rig.harness.updateSettings({ steeringMode: "one-at-a-time" });
      unwrap(await lane.steer("first steer"));
      unwrap(await lane.steer("second steer"));
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hi" }, { drivenAtOnce: true }));
      expect(lane.state.operation?.state.at).toBe("starting");
      expect(settledRecord(await lane.drive({ operationId, waitForRetry: true })).status).toBe("completed");
    });
  });

  it("starts the ordinary way when the model is not in the registry: the pass fails the run as a configuration failure", async () => {
    await withLane([], async (_rig, lane) => {
      unwrap(await lane.setModel({ provider: "scripted", modelId: "missing" }));
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "hi" }, { drivenAtOnce: true }));
      expect(lane.state.operation?.state.at).toBe("starting");
      const record = settledRecord(await lane.drive({ operationId, waitForRetry: true }));
      expect(record.status).toBe("failed");
      expect(record.error?.code).toBe("model_unavailable");
    });
  });

  it("a kill after the acceptance, before the request was sent: the fresh object recovers an unknown outcome, then retries", async () => {
    const { name, stub } = await createSession("first-request-crash");
    const first = await runInDurableObject(stub, async (instance: SessionObject) => {
      await appendScriptSteps(instance.session(), [{ text: "after the crash" }]);
      const rig = await attach(instance);
      await rig.harness.updateSettings(RETRY_NOW);
      const lane = await rig.harness.lane("main");
      const { operationId } = unwrap(await lane.accept({ kind: "prompt", prompt: "go" }, { drivenAtOnce: true }));
      return { operationId, leaf: lane.state.operation?.state.at, steps: stepsTaken(rig.session) };
    });
    expect(first).toMatchObject({ leaf: "assistant.effect_pending", steps: 0 });
    await abortAllDurableObjects();
    await runInDurableObject(sessionStub(name), async (instance: SessionObject, state) => {
      await state.storage.deleteAlarm();
      const rig = await attach(instance);
      const lane = rig.harness.getLane("main");
      if (!lane) throw new Error("the lane was not restored");
      expect(lane.state.operation?.state.at).toBe("assistant.effect_pending");
      const record = settledRecord(await lane.drive({ operationId: first.operationId, waitForRetry: true }));
      expect(record.status).toBe("completed");
      const entries = transcriptOf(lane);
      expect(shapeOf(entries)).toEqual([
        { role: "user", text: "go" },
        { role: "assistant", stopReason: "error", text: "" },
        { role: "assistant", stopReason: "stop", text: "after the crash" },
      ]);
      const interrupted = entries[1];
      expect(interrupted?.type === "message" && interrupted.message.role === "assistant" && interrupted.message.errorMessage).toBe(UNKNOWN_OUTCOME_MESSAGE);
      expect(objectInvariants(instance, state)).toEqual([]);
    });
  });
});
