import { gatedDelay } from "../../execution/effect-gate.ts";
import type { StateAt } from "../types.ts";
import { settled } from "./generation.ts";
import type { Pass, Step } from "./pass.ts";
import { scopeOf } from "./scope.ts";
import { continueOperation } from "./transition.ts";

/**
 * `assistant.retry_wait` (reference §3.10): at or after `notBefore` commit `ready` at once; before
 * it, either report the durable wait to the host (`waitForRetry: false`; the host's alarm drives
 * later) or wait on a timer created through the gate, so an abort cancels it.
 */
export async function retryWait(pass: Pass, state: StateAt<"assistant.retry_wait">): Promise<Step> {
  const remaining = state.notBefore - pass.core.clock();
  if (remaining > 0) {
    if (!pass.waitForRetry) {
      return { kind: "waiting", outcome: { kind: "waiting", operationId: pass.operationId, reason: "retry", notBefore: state.notBefore } };
    }
    await gatedDelay(pass.gate, remaining);
  }
  return settled(
    await continueOperation(pass, (_m, operation) => ({
      kind: "commit",
      writes: [],
      state: { ...scopeOf(operation.state), at: "assistant.ready", generationContext: state.generationContext, nextAttempt: state.nextAttempt },
      events: () => [{ type: "retry_start", lane: pass.lane.name, runId: pass.operationId, step: "assistant", attempt: state.nextAttempt }],
    })),
  );
}
