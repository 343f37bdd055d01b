import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import type { ModelsPort } from "../../harness/execution/models.ts";
import { AgentHarness } from "../../harness/runtime/harness.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import { MAX_PENDING_RUNS } from "../../harness/runtime/pending-runs.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { appendScriptSteps, SessionScriptSource } from "../../models/scripted/script-source.ts";
import { createSession } from "../helpers/sessions.ts";
import { SCRIPT } from "./helpers.ts";
import { briefs, heldHook } from "./drive-helpers.ts";

// A prompt with `ifBusy: "interrupt"` that is refused (409 QueueFull past 20 pending runs, 422
// InvalidMessage for an empty prompt) changes nothing ("Nothing is written when a request is
// refused"; docs/api-lanes.md "Prompts while busy"). The abort's gate protocol (abort.ts
// requestAbortWith) closes the live pass's admission before its command runs; a command that
// commits no marker opens it again. Before, the gate stayed "aborting" for good: every later
// `admit` of that pass threw AbortRequested on an already-resolved cancellation and the pass loop
// (driver.ts) re-dispatched the same leaf, a microtask spin that never yielded (in production the
// object would burn its CPU limit and be reset).
//
// The spin never yields, so the test bounds it itself: the models port counts `getModel` (called
// once per `generate` attempt) and the session's `getEntries` is counted too (called once per
// `starting` dispatch, before its before_run admission); past a bound each throws, the pass fails
// and a spin ends instead of hanging the test worker. A healthy run calls each a few times.

const SPIN_GUARD = 200;

function countingModels(base: ModelsPort): { models: ModelsPort; calls: () => number } {
  let calls = 0;
  const models: ModelsPort = {
    getModel: (provider, modelId) => {
      calls++;
      if (calls > SPIN_GUARD) throw new Error(`spin guard: getModel called ${calls} times`);
      return base.getModel(provider, modelId);
    },
    streamSimple: (model, context, options) => base.streamSimple(model, context, options),
    streamDeferred: (model, handle, options) => base.streamDeferred(model, handle, options),
    cancelDeferred: (model, handle, options) => base.cancelDeferred(model, handle, options),
  };
  return { models, calls: () => calls };
}

async function scenario(refuse: (lane: AgentLane) => Promise<{ ok: boolean; code?: string }>) {
  const { stub } = await createSession("intref");
  return runInDurableObject(stub, async (object: SessionObject) => {
    const session = object.session();
    const getEntries = session.getEntries.bind(session);
    let getEntriesCalls = 0;
    session.getEntries = (ids) => {
      getEntriesCalls++;
      if (getEntriesCalls > SPIN_GUARD) throw new Error(`spin guard: getEntries called ${getEntriesCalls} times`);
      return getEntries(ids);
    };
    await appendScriptSteps(session, [{ text: "the answer" }]);
    const counted = countingModels(createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) }));
    const { harness } = await AgentHarness.create({ session, models: counted.models, seed: { model: SCRIPT } });
    const lane = await harness.lane("main");
    const held = heldHook();
    harness.hooks.on("before_run", async (_event, { signal }) => {
      await held.hold(signal);
      return {};
    });
    const admitted = await lane.accept({ kind: "prompt", prompt: "question" });
    if (!admitted.ok) throw new Error("accept failed");
    const operationId = admitted.value.operationId;
    // The pass is live, parked inside its admitted before_run pipeline.
    const driving = lane.drive({ operationId }).then(
      (result) => ({ result }),
      (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
    );
    await held.entered;
    const refused = await refuse(lane);
    const gateAfterRefusal = lane.liveGate(operationId)?.state;
    const controlAfterRefusal = lane.state.operation?.state.control.status;
    held.release();
    const outcome = await driving;
    session.getEntries = getEntries;
    return {
      refused,
      gateAfterRefusal,
      controlAfterRefusal,
      outcome: "error" in outcome ? { error: outcome.error } : outcome.result.ok && outcome.result.value.kind === "settled" ? { status: outcome.result.value.outcome.status } : { other: JSON.stringify(outcome.result) },
      getModelCalls: counted.calls(),
      getEntriesCalls,
      transcript: (() => {
        try {
          return briefs(lane);
        } catch (error) {
          return [`unreadable: ${error instanceof Error ? error.message : String(error)}`];
        }
      })(),
    };
  });
}

describe("a refused interrupt leaves the running operation alone", () => {
  it("QueueFull (20 pending runs): the live pass's gate stays open and the run completes normally", async () => {
    const result = await scenario(async (lane) => {
      for (let index = 0; index < MAX_PENDING_RUNS; index++) {
        const queued = await lane.acceptWhileBusy({ kind: "prompt", prompt: `pending ${index}` }, "enqueue");
        if (!queued.ok) throw new Error(`pending ${index} refused`);
      }
      const answer = await lane.acceptWhileBusy({ kind: "prompt", prompt: "interrupt now" }, "interrupt");
      return answer.ok ? { ok: true } : { ok: false, code: answer.error.code };
    });
    expect(result.refused).toEqual({ ok: false, code: "QueueFull" });
    // Nothing was committed: the operation is still running...
    expect(result.controlAfterRefusal).toBe("running");
    // ...so its live pass must go on: it completes...
    expect(result.outcome).toEqual({ status: "completed" });
    expect(result.getModelCalls).toBeLessThan(20);
    expect(result.getEntriesCalls).toBeLessThan(20);
    // The answer, then the first of the 20 pending runs starts in the settlement's commit.
    expect(result.transcript.slice(0, 3)).toEqual(["user: question", "assistant(stop): the answer", "user: pending 0"]);
    // ...because its gate still admits effects.
    expect(result.gateAfterRefusal).toBe("open");
  });

  it("InvalidMessage (empty prompt): the live pass's gate stays open and the run completes normally", async () => {
    const result = await scenario(async (lane) => {
      const answer = await lane.acceptWhileBusy({ kind: "prompt", prompt: "" }, "interrupt");
      return answer.ok ? { ok: true } : { ok: false, code: answer.error.code };
    });
    expect(result.refused).toEqual({ ok: false, code: "InvalidMessage" });
    expect(result.controlAfterRefusal).toBe("running");
    expect(result.outcome).toEqual({ status: "completed" });
    expect(result.getModelCalls).toBeLessThan(20);
    expect(result.getEntriesCalls).toBeLessThan(20);
    expect(result.transcript).toEqual(["user: question", "assistant(stop): the answer"]);
    // ...because its gate still admits effects.
    expect(result.gateAfterRefusal).toBe("open");
  });
});
