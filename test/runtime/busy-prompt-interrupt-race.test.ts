import { describe, expect, it } from "vitest";
import type { BusyPromptAnswer } from "../../harness/runtime/busy-prompts.ts";
import { ECHO } from "./helpers.ts";
import { briefs, settledRecord, unwrap, withDriveRig } from "./drive-helpers.ts";

// `ifBusy: "interrupt"` "aborts the current operation and puts this run first in line, in one
// commit" (docs/api-lanes.md "Prompts while busy"). Whether the lane is idle is decided on the
// mutation line: an acceptance queued ahead of the interrupt there is the operation it interrupts.
// Before, busy-prompts.ts read the lane's state before queuing and, finding it idle, queued a
// plain enqueue: the prompt became an ordinary pending run behind an operation it should have
// interrupted. The test holds the session's line so that the order on it is forced, as the race
// catalog does.

describe("interrupt decides on the line", () => {
  it("a prompt accepted just ahead of an interrupt (same line) is interrupted by it", async () => {
    const result = await withDriveRig(
      async (rig) => {
        const lane = await rig.harness.lane("main");
        const hold = await rig.session.beginMutation();
        // Both queue behind the held line, in this order; the lane is idle when each is called.
        const first = lane.accept({ kind: "prompt", prompt: "first" });
        const interrupting = lane.acceptWhileBusy({ kind: "prompt", prompt: "now" }, "interrupt");
        hold.end();
        const firstId = unwrap(await first).operationId;
        const answer: BusyPromptAnswer = unwrap(await interrupting);
        const firstRecord = settledRecord(await lane.drive({ operationId: firstId }));
        const next = lane.state.operation?.meta.operationId;
        if (next) await lane.drive({ operationId: next });
        return {
          interrupted: "admission" in answer ? answer.interrupted : undefined,
          firstStatus: firstRecord.status,
          transcript: briefs(lane),
        };
      },
      { model: ECHO },
    );
    // When the interrupt reaches the line, "first" is the current operation: it is aborted...
    expect(result.interrupted).toMatchObject({ newlyRequested: true });
    expect(result.firstStatus).toBe("aborted");
    // ...instead of being answered in full before the interrupting prompt gets its turn.
    expect(result.transcript).not.toContain("assistant(stop): first");
  });
});
