import type { HarnessEvent } from "../../../schema/lane.ts";
import type { OperationState } from "../types.ts";
import type { Pass, Step } from "./pass.ts";
import { syntheticResponse } from "./assistant/recover.ts";
import { settleResponse } from "./assistant/settle-response.ts";
import { segmentEnd } from "./summary/boundary.ts";
import { cancelDeferredRun } from "./deferred/poll.ts";
import { runToolBatch } from "./tools/batch.ts";
import { settled, settleOperation } from "./transition.ts";

/**
 * Cancellation reconciliation (reference §4.5): runs before any ordinary dispatch once control is
 * `cancel_requested`, starts no new hook, provider or tool work, and ends every leaf in the
 * terminal aborted transaction (admitted work is settled first, never erased).
 */
export async function reconcile(pass: Pass, state: OperationState): Promise<Step> {
  switch (state.at) {
    case "assistant.effect_pending":
      // A live pass settles its own stream; reaching this leaf here means the effect was never
      // admitted in this pass or the process restarted: settle a synthetic aborted response.
      return settleResponse(pass, syntheticResponse(pass.core, pass.operationId, state, "aborted"), { recovery: true, framed: true });
    case "tools":
      // Planned calls settle as cancelled, restored effects as interrupted; all are placed.
      return runToolBatch(pass, state);
    case "deferred.suspended":
    case "deferred.effect_pending":
      // Best-effort cancelDeferred, then (a poll in flight settled as aborted) terminal aborted.
      return cancelDeferredRun(pass, state);
    case "starting":
    case "checkpoint":
    case "assistant.ready":
    case "assistant.retry_wait":
    case "navigation.ready_to_commit":
      return terminalAborted(pass);
    case "summary.deciding":
    case "summary.ready":
    case "summary.effect_pending":
    case "summary.retry_wait":
      // A run aborted inside its compaction closes the segment first (compaction_end, run_end).
      return terminalAborted(pass, state.task.boundary.kind === "resume_checkpoint" ? [segmentEnd(pass, state.task, "aborted")] : []);
  }
}

async function terminalAborted(pass: Pass, events: HarnessEvent[] = []): Promise<Step> {
  return settled(await settleOperation(pass, () => ({ kind: "finish", writes: [], status: "aborted", events: () => events })));
}
