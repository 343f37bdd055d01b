import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import { UNKNOWN_OUTCOME_MESSAGE } from "../../harness/runtime/drive/assistant/recover.ts";
import { AgentHarness } from "../../harness/runtime/harness.ts";
import type { OperationState } from "../../harness/runtime/types.ts";
import { Session } from "../../harness/session/session.ts";
import type { CommitResult, Storage, Write } from "../../harness/session/storage.ts";
import { createModelRegistry } from "../../models/registry.ts";
import { appendScriptSteps, SessionScriptSource } from "../../models/scripted/script-source.ts";
import type { ScriptStep } from "../../models/scripted/steps.ts";
import type { HarnessEvent } from "../../schema/lane.ts";
import { createSession, sessionStub } from "../helpers/sessions.ts";
import { SCRIPT } from "./helpers.ts";
import { ForwardingStorage } from "../../harness/session/forwarding-storage.ts";
import { objectInvariants } from "./invariants.ts";
import { acceptPrompt, attach, baseline, settledRecord, shapeOf, stepsTaken, transcriptOf } from "./crash-rig.ts";
import { longOperationForm } from "../../harness/runtime/operation-short-form.ts";
import { isRecord } from "../../schema/json.ts";

// The injected storage failure of QUALITY R1: a commit that throws inside the object is a harness
// fault (reference §1.5: all calls reject, the process must restart). A fresh object then recovers
// the operation from the last committed state, as after any crash.

/** The object's SQL storage with one commit, chosen by `failWhen`, throwing before it applies. */
class FailingStorage extends ForwardingStorage {
  injected = 0;
  constructor(
    inner: Storage,
    private readonly failWhen: (writes: readonly Write[]) => boolean,
  ) {
    super(inner);
  }
  override commit(writes: readonly Write[]): CommitResult {
    if (this.injected === 0 && this.failWhen(writes)) {
      this.injected++;
      throw new Error("injected commit failure");
    }
    return this.inner.commit(writes);
  }
}

const settlesAssistant = (writes: readonly Write[]): boolean =>
  writes.some((write) => write.kind === "entry" && write.entry.type === "message" && write.entry.message.role === "assistant");

/** The commit that stores the operation at its effect-pending leaf (its lane state holds the leaf). */
const entersEffectPending = (writes: readonly Write[]): boolean =>
  writes.some((write) => {
    if (write.kind !== "value" || write.op !== "set" || write.namespace !== "pi.lane.state" || !isRecord(write.value)) return false;
    const open = write.value["o"];
    return isRecord(open) && isRecord(open["s"]) && longOperationForm<{ at?: unknown }>(open["s"]).at === "assistant.effect_pending";
  });

interface Faulted {
  name: string;
  operationId: string;
  driveError: string;
  faulted: boolean;
  faultEvents: HarnessEvent[];
  injected: number;
  leaf: string | undefined;
  steps: number;
  acceptAfter: string;
}

/** Runs one prompt over a session whose storage fails one commit; the harness must fault. */
async function runWithFailure(steps: ScriptStep[], failWhen: (writes: readonly Write[]) => boolean): Promise<Faulted> {
  const { name, stub } = await createSession("commit-fail");
  return runInDurableObject(stub, async (_instance: SessionObject, state) => {
    // The only storage adapter of this object instance: instance.session() is never opened here.
    const base = SqlSessionStorage.open(state.storage);
    if (!base) throw new Error("no session");
    const storage = new FailingStorage(base, failWhen);
    const session = new Session(storage);
    await appendScriptSteps(session, steps);
    const models = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) });
    const { harness } = await AgentHarness.create({ session, models, seed: { model: SCRIPT } });
    const events: HarnessEvent[] = [];
    harness.events.on("*", (event) => {
      events.push(event);
    });
    await harness.updateSettings({ retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 } });
    const lane = await harness.lane("main");
    const operationId = await acceptPrompt(lane, "go");
    const driveError = await lane.drive({ operationId, waitForRetry: true }).then(
      (value) => `resolved: ${JSON.stringify(value)}`,
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    const acceptAfter = await lane.accept({ kind: "prompt", prompt: "again" }).then(
      (value) => (value.ok ? "accepted" : value.error.code),
      (error: unknown) => `threw ${String(error)}`,
    );
    // The faulted harness sealed its session (and storage): read what is durable through a new one.
    const reader = SqlSessionStorage.open(state.storage);
    if (!reader) throw new Error("no session");
    const taken = stepsTaken(new Session(reader));
    // Every delivery bound before the fault has been delivered once close() resolves.
    await harness.close().catch(() => undefined);
    return {
      name,
      operationId,
      driveError,
      faulted: harness.faulted,
      faultEvents: events.filter((event) => event.type === "fault"),
      injected: storage.injected,
      leaf: lane.state.operation?.state.at,
      steps: taken,
      acceptAfter,
    };
  });
}

/** Kills every object, re-attaches to the fresh one and drives the operation from durable state. */
async function recoverInFreshObject(faulted: Faulted) {
  await abortAllDurableObjects();
  return runInDurableObject(sessionStub(faulted.name), async (instance: SessionObject, state) => {
    const rig = await attach(instance);
    const lane = rig.harness.getLane("main");
    if (!lane) throw new Error("lane not restored");
    const restored: OperationState | undefined = lane.state.operation?.state;
    const driven = await lane.drive({ operationId: faulted.operationId, waitForRetry: true });
    const transcript = transcriptOf(lane);
    return { restored, record: settledRecord(driven), transcript, shape: shapeOf(transcript), steps: stepsTaken(rig.session), violations: objectInvariants(instance, state) };
  });
}

describe("an injected commit failure faults the harness; a fresh object recovers", () => {
  it("failing the settlement commit: fault event, every call rejects, recovery settles the unknown outcome", async () => {
    const faulted = await runWithFailure([{ text: "lost answer" }, { text: "second" }], settlesAssistant);
    expect(faulted.injected).toBe(1);
    expect(faulted.driveError).toContain("injected commit failure");
    expect(faulted.faulted).toBe(true);
    expect(faulted.faultEvents).toEqual([expect.objectContaining({ type: "fault", message: expect.stringContaining("injected commit failure") })]);
    // Every later call rejects with HarnessFault (reference §2.4), Result channel or not.
    expect(faulted.acceptAfter).toBe("threw HarnessFault: injected commit failure");
    // In memory the projection never moved past the last committed state.
    expect(faulted.leaf).toBe("assistant.effect_pending");
    expect(faulted.steps).toBe(1);

    const recovered = await recoverInFreshObject(faulted);
    expect(recovered.restored?.at).toBe("assistant.effect_pending");
    expect(recovered.record).toMatchObject({ operationId: faulted.operationId, status: "completed" });
    // The synthetic response carries the latest committed partial (whatever frames made it).
    expect(recovered.shape.map((s) => [s.role, s.stopReason])).toEqual([["user", undefined], ["assistant", "error"], ["assistant", "stop"]]);
    expect("lost answer".startsWith(recovered.shape[1]?.text ?? "-")).toBe(true);
    expect(recovered.shape[2]?.text).toBe("second");
    const synthetic = recovered.transcript[1];
    expect(synthetic?.type === "message" && synthetic.message.role === "assistant" && synthetic.message.errorMessage).toBe(UNKNOWN_OUTCOME_MESSAGE);
    expect(recovered.steps).toBe(2);
    expect(recovered.violations).toEqual([]);
  });

  it("failing the request intent: no effect was admitted, the fresh object regenerates like an uninterrupted run", async () => {
    const steps = [{ text: "only answer" }];
    const faulted = await runWithFailure(steps, entersEffectPending);
    expect(faulted.injected).toBe(1);
    expect(faulted.faulted).toBe(true);
    expect(faulted.faultEvents).toHaveLength(1);
    // The start wrote no commit of its own (nothing to place): the intent is the first after acceptance.
    expect(faulted.leaf).toBe("starting");
    // Effects never precede their intent: the provider was never asked.
    expect(faulted.steps).toBe(0);

    const recovered = await recoverInFreshObject(faulted);
    expect(recovered.restored?.at).toBe("starting");
    expect(recovered.record.status).toBe("completed");
    expect(recovered.steps).toBe(1);
    expect(recovered.violations).toEqual([]);
    expect(recovered.shape).toEqual((await baseline({ steps })).shape);
  });
});
