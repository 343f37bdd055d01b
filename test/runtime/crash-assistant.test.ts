import { describe, expect, it } from "vitest";
import { UNKNOWN_OUTCOME_MESSAGE } from "../../harness/runtime/drive/assistant/recover.ts";
import type { OperationState, StateAt } from "../../harness/runtime/types.ts";
import { pendingAssistantFrames } from "../../harness/session/builtin-addresses.ts";
import type { Entry } from "../../schema/entries.ts";
import type { AssistantMessage } from "../../schema/messages.ts";
import { baseline, crashAt, leafOf, never, settledRecord, type Attached } from "./crash-rig.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";

// The assistant leaves across a real kill (reference §4.6): the four crash positions of the
// provider effect — before the intent (assistant.ready, crash-boundary), after the intent before
// the effect, during the effect, after the settlement — plus a durable retry wait.

const LONG = Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ");
const RETRY_NOW = { retry: { enabled: true, maxRetries: 2, baseDelayMs: 0 } };
const NO_RETRY = { retry: { enabled: false, maxRetries: 0, baseDelayMs: 0 } };

function assistantAt(entries: readonly Entry[], index: number): AssistantMessage {
  const entry = entries[index];
  if (entry?.type !== "message" || entry.message.role !== "assistant") throw new Error(`entry ${index} is not an assistant`);
  return entry.message;
}

function framesOf(rig: Attached, lane: AgentLane, operationId: string): number {
  const state = lane.state.operation?.state;
  if (state?.at !== "assistant.effect_pending") return 0;
  return rig.session.readList(pendingAssistantFrames(operationId, state.responseEntryId), { limit: 100 }).length;
}

function pending(state: OperationState | null): StateAt<"assistant.effect_pending"> {
  if (state?.at !== "assistant.effect_pending") throw new Error(`not effect_pending: ${state?.at}`);
  return state;
}

describe("crash during the assistant effect (mid-stream, frames committed)", () => {
  it("settles the latest committed partial under the reserved ids as an unknown outcome, then retries with fresh ids", async () => {
    let frames = 0;
    const crashed = await crashAt({
      steps: [{ text: LONG, chunkMs: 4 }, { text: "second attempt" }],
      settings: RETRY_NOW,
      park: (rig, lane) => () => {
        const op = lane.state.operation?.meta.operationId;
        frames = op === undefined ? 0 : framesOf(rig, lane, op);
        return frames >= 2;
      },
    });
    const parked = pending(crashed.parked);
    expect(crashed.restored).toEqual(crashed.parked);
    expect(crashed.stepsAtKill).toBe(1);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    // The synthetic response: reserved ids, partial content, zero usage, the unknown-outcome error.
    const recovered = crashed.transcript[1];
    expect(recovered?.id).toBe(parked.responseEntryId);
    const synthetic = assistantAt(crashed.transcript, 1);
    expect(synthetic).toMatchObject({ stopReason: "error", errorMessage: UNKNOWN_OUTCOME_MESSAGE, api: "scripted", provider: "scripted", model: "script" });
    expect(synthetic.usage.totalTokens).toBe(0);
    const partial = crashed.shape[1]?.text ?? "";
    expect(partial.length).toBeGreaterThan(0);
    expect(LONG.startsWith(partial)).toBe(true);
    expect(partial).not.toBe(LONG);
    // Classified as a retryable error (recovery counts as retryable), the next attempt has fresh ids.
    expect(crashed.events).toContainEqual(expect.objectContaining({ type: "retry_scheduled", attempt: 2, recovery: true }));
    expect(crashed.transcript[2]?.id).not.toBe(parked.responseEntryId);
    expect(crashed.shape.map((s) => [s.role, s.stopReason])).toEqual([["user", undefined], ["assistant", "error"], ["assistant", "stop"]]);
    expect(crashed.shape[2]?.text).toBe("second attempt");
    // One request per attempt, one usage row per settled attempt, frames deleted at settlement.
    expect(crashed.stepsAfter).toBe(2);
    expect(crashed.usageRows).toBe(2);
    expect(crashed.violations).toEqual([]);
    // The recovered run equals an uninterrupted run whose first attempt failed the same way.
    const reference = await baseline({ steps: [{ error: partial, retryable: true }, { text: "second attempt" }], settings: RETRY_NOW });
    expect(reference.shape.map((s) => [s.role, s.stopReason])).toEqual(crashed.shape.map((s) => [s.role, s.stopReason]));
  });
});

describe("crash after the intent, before the effect (no frame)", () => {
  const parkAtIntent = ({ harness }: Attached, lane: AgentLane) => {
    let parked = false;
    // turn_start is bound by the intent commit; the pass awaits its delivery before the stream.
    harness.events.on("turn_start", () => {
      parked = true;
      return never();
    });
    return () => parked && leafOf(lane) === "assistant.effect_pending";
  };

  it("settles an empty synthetic response (api unknown, captured provider/model), then the retry takes the step", async () => {
    const crashed = await crashAt({ steps: [{ text: "the answer" }], settings: RETRY_NOW, park: parkAtIntent });
    const parked = pending(crashed.parked);
    expect(crashed.restored).toEqual(crashed.parked);
    expect(crashed.stepsAtKill).toBe(0);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    const synthetic = assistantAt(crashed.transcript, 1);
    expect(crashed.transcript[1]?.id).toBe(parked.responseEntryId);
    expect(synthetic).toMatchObject({ content: [], api: "unknown", provider: "scripted", model: "script", stopReason: "error", errorMessage: UNKNOWN_OUTCOME_MESSAGE });
    expect(crashed.shape.slice(2)).toEqual([{ role: "assistant", stopReason: "stop", text: "the answer" }]);
    expect(crashed.stepsAfter).toBe(1);
    expect(crashed.usageRows).toBe(2);
    expect(crashed.violations).toEqual([]);
  });

  it("with no attempt left the unknown outcome fails the run, with exactly one record", async () => {
    const crashed = await crashAt({ steps: [{ text: "never requested" }], settings: NO_RETRY, park: parkAtIntent });
    expect(settledRecord(crashed.driven)).toMatchObject({ status: "failed", error: { code: "assistant_error", message: UNKNOWN_OUTCOME_MESSAGE } });
    expect(crashed.shape.map((s) => [s.role, s.stopReason])).toEqual([["user", undefined], ["assistant", "error"]]);
    expect(crashed.stepsAfter).toBe(0);
    expect(crashed.idle).toBe(true);
    expect(crashed.violations).toEqual([]);
  });
});

describe("crash after the settlement commit", () => {
  it("continues from the successor leaf and never settles twice", async () => {
    const steps = [{ text: "settled once" }];
    const crashed = await crashAt({
      steps,
      park: ({ harness }) => {
        // A before_run_end handler makes the boundary mediate, so the settlement commits the
        // checkpoint leaf itself (without one, it finishes the run in the same commit).
        harness.hooks.on("before_run_end", () => ({}));
        let parked = false;
        // The usage event is bound by the settlement commit, after it.
        harness.events.on("usage", () => {
          parked = true;
          return never();
        });
        return () => parked;
      },
    });
    expect(crashed.parked).toMatchObject({ at: "checkpoint", continuation: { kind: "may_finish", includeFinalAssistant: true } });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.stepsAtKill).toBe(1);
    expect(crashed.stepsAfter).toBe(1);
    expect(crashed.usageRows).toBe(1);
    expect(crashed.events.filter((event) => event.type === "entry_added")).toEqual([]);
    expect(crashed.violations).toEqual([]);
    expect(crashed.shape).toEqual((await baseline({ steps })).shape);
  });

  it("after the terminal commit the fresh object is idle and drive answers the one record", async () => {
    let record: unknown;
    const crashed = await crashAt({
      steps: [{ text: "done" }],
      park: ({ harness }) => {
        harness.events.on("run_end", (event) => {
          record = event;
          return never();
        });
        return () => record !== undefined;
      },
    });
    expect(crashed.parked).toBeNull();
    expect(crashed.restored).toBeNull();
    expect(crashed.open).toEqual([]);
    expect(settledRecord(crashed.driven)).toMatchObject({ operationId: crashed.operationId, status: "completed" });
    expect(crashed.events).toEqual([]);
    expect(crashed.violations).toEqual([]);
  });
});

describe("crash in assistant.retry_wait", () => {
  const steps = [{ error: "flaky upstream", retryable: true }, { text: "recovered" }];
  const LATER = { retry: { enabled: true, maxRetries: 2, baseDelayMs: 3_600_000 } };
  const parkAtWait = (_rig: Attached, lane: AgentLane) => () => leafOf(lane) === "assistant.retry_wait";

  it("stays a durable wait before notBefore: drive reports the same wait and writes nothing", async () => {
    const crashed = await crashAt({ steps, settings: LATER, park: parkAtWait, drive: (lane, operationId) => lane.drive({ operationId, waitForRetry: false }) });
    expect(crashed.restored).toEqual(crashed.parked);
    const notBefore = crashed.parked?.at === "assistant.retry_wait" ? crashed.parked.notBefore : -1;
    expect(crashed.driven).toEqual({ ok: true, value: { kind: "waiting", operationId: crashed.operationId, reason: "retry", notBefore } });
    expect(crashed.events).toEqual([]);
    expect(crashed.stepsAfter).toBe(1);
    expect(crashed.idle).toBe(false);
    expect(crashed.violations).toEqual([]);
  });

  it("at notBefore the reopened pass commits ready and the next attempt completes like an uninterrupted retry", async () => {
    let notBefore = 0;
    const crashed = await crashAt({
      steps,
      settings: LATER,
      park: (rig, lane) => () => {
        const state = lane.state.operation?.state;
        if (state?.at === "assistant.retry_wait") notBefore = state.notBefore;
        return parkAtWait(rig, lane)();
      },
      clock: () => notBefore + 1,
      drive: (lane, operationId) => lane.drive({ operationId, waitForRetry: false }),
    });
    expect(crashed.parked).toMatchObject({ at: "assistant.retry_wait", nextAttempt: 2, errorMessage: expect.stringContaining("flaky upstream") });
    expect(settledRecord(crashed.driven).status).toBe("completed");
    expect(crashed.events.map((event) => event.type)).toContain("retry_start");
    expect(crashed.events).toContainEqual(expect.objectContaining({ type: "retry_end", attempt: 2, success: true }));
    expect(crashed.stepsAfter).toBe(2);
    expect(crashed.usageRows).toBe(2);
    expect(crashed.violations).toEqual([]);
    expect(crashed.shape).toEqual((await baseline({ steps, settings: RETRY_NOW })).shape);
  });
});
