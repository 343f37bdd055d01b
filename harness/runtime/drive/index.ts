import type { OperationState } from "../types.ts";
import { boundary } from "./run/checkpoint.ts";
import { deferredSuspended, recoverPoll } from "./deferred/poll.ts";
import { generate, sendIntended } from "./assistant/generation.ts";
import { commitNavigation } from "./navigation/commit.ts";
import type { Pass, Step } from "./pass.ts";
import { recoverAssistant } from "./assistant/recover.ts";
import { retryWait } from "./assistant/retry-wait.ts";
import { startRun } from "./run/start.ts";
import { decideSummary, recoverSummary, summaryReady, summaryRetryWait } from "./summary/task.ts";
import { runToolBatch } from "./tools/batch.ts";

/** Ordinary dispatch: the single visible switch over the 13 leaves (reference §4.1). */
export function dispatch(pass: Pass, state: OperationState): Promise<Step> {
  switch (state.at) {
    case "starting":
      return startRun(pass, state);
    case "checkpoint":
      return boundary(pass, state);
    case "assistant.ready":
      return generate(pass, state);
    case "assistant.effect_pending":
      // Met by a pass, the outcome is unknown, unless this process committed the intent with the
      // run's acceptance and has not sent it yet (first-request.ts).
      return pass.lane.takeRequestPermit(pass.operationId, state.responseEntryId) ? sendIntended(pass, state) : recoverAssistant(pass, state);
    case "assistant.retry_wait":
      return retryWait(pass, state);
    case "tools":
      return runToolBatch(pass, state);
    case "navigation.ready_to_commit":
      return commitNavigation(pass, state);
    case "summary.deciding":
      return decideSummary(pass, state);
    case "summary.ready":
      return summaryReady(pass, state);
    case "summary.effect_pending":
      // A live pass performs its attempt inside summaryReady; met here, the outcome is unknown.
      return recoverSummary(pass, state);
    case "summary.retry_wait":
      return summaryRetryWait(pass, state);
    case "deferred.suspended":
      return deferredSuspended(pass, state);
    case "deferred.effect_pending":
      // A live pass settles its poll inside deferredSuspended; met here, the outcome is unknown.
      return recoverPoll(pass, state);
  }
}
