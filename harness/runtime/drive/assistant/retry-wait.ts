import { gatedDelay } from "../../../execution/effect-gate.ts";
import type { StateAt } from "../../types.ts";
import type { Pass, Step } from "../pass.ts";
import { scopeOf } from "../scope.ts";
import { continueOperation, settled } from "../transition.ts";

/**
 * `assistant.retry_wait` (reference §3.10): at or after `notBefore` commit `ready` at once; before
 * it, either report the durable wait to the host (`waitForRetry: false`; the host's alarm drives
 * later) or wait on a timer created through the gate, so an abort cancels it.
 */
export async function retryWait(pass: Pass, state: StateAt<"assistant.retry_wait">): Promise<Step> {
  const waiting = await untilNotBefore(pass, state.notBefore);
  if (waiting) return waiting;
  return settled(
    await continueOperation(pass, (_m, operation) => ({
      kind: "commit",
      writes: [],
      state: { ...scopeOf(operation.state), at: "assistant.ready", generationContext: state.generationContext, nextAttempt: state.nextAttempt },
      events: () => [{ type: "retry_start", lane: pass.lane.name, runId: pass.operationId, step: "assistant", attempt: state.nextAttempt }],
    })),
  );
}

/**
 * A retry wait's delay (assistant and summary alike): nothing once `notBefore` has passed;
 * before it, the durable wait reported to the host (`waitForRetry: false`; its alarm drives
 * later), or a timer created through the gate, so an abort cancels it.
 */
export async function untilNotBefore(pass: Pass, notBefore: number): Promise<Step | undefined> {
  const remaining = notBefore - pass.core.clock();
  if (remaining <= 0) return undefined;
  if (!pass.waitForRetry) return { kind: "waiting", outcome: { kind: "waiting", operationId: pass.operationId, reason: "retry", notBefore } };
  await gatedDelay(pass.gate, remaining);
  return undefined;
}
