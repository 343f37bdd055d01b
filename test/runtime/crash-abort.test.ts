import { describe, expect, it } from "vitest";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import { crashAt, leafOf, never, settledRecord, until, type Attached } from "./crash-rig.ts";

// A kill after the cancellation marker committed (reference §4.4, §4.5, §4.6): the marker is
// durable, so the fresh object lists the operation as aborting and its first pass reconciles
// instead of dispatching. Steer/followUp were drained by the marker commit; nextRun stays queued.
// The passes here are parked inside an event delivery, so the abort's own delivery never completes:
// the test waits on the published projection (the commit), never on the call.

function cancelled(lane: AgentLane): boolean {
  return lane.state.operation?.state.control.status === "cancel_requested";
}

async function queueAndAbort(lane: AgentLane, operationId: string): Promise<void> {
  void lane.steer("steer that the abort drains");
  await until(() => lane.state.inbox.length === 1, "the steer commit");
  void lane.nextRun("kept for the next run");
  await until(() => lane.state.inbox.length === 2, "the nextRun commit");
  void lane.requestAbort(operationId);
  await until(() => cancelled(lane), "the cancellation marker");
  expect(lane.state.inbox.map((item) => item.kind)).toEqual(["nextRun"]);
}

function parkOn(type: "usage" | "turn_start") {
  return ({ harness }: Attached, lane: AgentLane) => {
    let parked = false;
    harness.events.on(type, () => {
      parked = true;
      return never();
    });
    return () => parked && lane.state.operation !== null;
  };
}

describe("crash after the abort marker", () => {
  it("at checkpoint{may_finish}: terminal aborted directly, before_run_end never runs, nextRun survives", async () => {
    let finishHook = 0;
    const crashed = await crashAt({
      steps: [{ text: "answered before the abort" }],
      park: (rig, lane) => {
        // A before_run_end handler makes the settlement commit the checkpoint rather than finish.
        rig.harness.hooks.on("before_run_end", () => ({}));
        return parkOn("usage")(rig, lane);
      },
      whileParked: (_rig, lane, operationId) => queueAndAbort(lane, operationId),
      reopen: ({ harness }) => {
        harness.hooks.on("before_run_end", () => {
          finishHook++;
          return {};
        });
      },
    });
    expect(crashed.parked).toMatchObject({ at: "checkpoint", control: { status: "cancel_requested" } });
    expect(crashed.restored).toEqual(crashed.parked);
    expect(crashed.open).toEqual([expect.objectContaining({ operationId: crashed.operationId, aborting: true })]);
    expect(settledRecord(crashed.driven)).toMatchObject({ status: "aborted" });
    expect(finishHook).toBe(0);
    expect(crashed.shape.map((s) => [s.role, s.stopReason])).toEqual([["user", undefined], ["assistant", "stop"]]);
    expect(crashed.events.map((event) => event.type)).toEqual(["run_end"]);
    expect(crashed.violations).toEqual([]);
  });

  it("at assistant.effect_pending with no frame: a synthetic aborted response under the reserved ids, then terminal aborted", async () => {
    const crashed = await crashAt({
      steps: [{ text: "never requested" }],
      settings: { retry: { enabled: true, maxRetries: 3, baseDelayMs: 0 } },
      park: (rig, lane) => {
        const parked = parkOn("turn_start")(rig, lane);
        return () => parked() && leafOf(lane) === "assistant.effect_pending";
      },
      whileParked: (_rig, lane, operationId) => queueAndAbort(lane, operationId),
    });
    const parked = crashed.parked;
    if (parked?.at !== "assistant.effect_pending") throw new Error("not parked at effect_pending");
    expect(crashed.restored).toEqual(parked);
    expect(settledRecord(crashed.driven)).toMatchObject({ status: "aborted" });
    const synthetic = crashed.transcript[1];
    expect(synthetic?.id).toBe(parked.responseEntryId);
    expect(synthetic?.type === "message" && synthetic.message).toMatchObject({ role: "assistant", stopReason: "aborted", content: [], api: "unknown", provider: "scripted", model: "script" });
    // No retry under cancellation, no provider request at all, one (zero) usage row.
    expect(crashed.events.map((event) => event.type)).not.toContain("retry_scheduled");
    expect(crashed.stepsAfter).toBe(0);
    expect(crashed.usageRows).toBe(1);
    expect(crashed.violations).toEqual([]);
  });
});
