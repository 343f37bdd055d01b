import { AbortRequested, createEffectGate, type Gate, type GateControl } from "../execution/effect-gate.ts";
import { readResult } from "./operation-codec.ts";
import type { HarnessCore } from "./core.ts";
import { dispatch } from "./drive/index.ts";
import type { LaneHandle, Pass, Step } from "./drive/pass.ts";
import { reconcile } from "./drive/reconcile.ts";
import type { DriveOutcome } from "./types.ts";

/** A `before_drive` handler threw: this pass fails, the harness does not (ARCHITECTURE D14.24). */
export class DrivePassFailed extends Error {
  override readonly name = "DrivePassFailed";
  constructor(readonly reason: unknown) {
    super(`before_drive failed: ${reason instanceof Error ? reason.message : String(reason)}`);
  }
}

/**
 * The process-local continuation of one pass over one operation (reference §4.1). At most one per
 * lane; never replaced or abandoned within a process; its gate orders abort against admission.
 */
export class Drive {
  readonly gate: Gate;
  readonly control: GateControl;
  completion!: Promise<DriveOutcome>;
  /** Deferred polls this pass may make: 1 when installed with `pollDeferred`, else 0 (§4.1, §3.11). */
  private deferredPermits: number;

  constructor(
    readonly operationId: string,
    readonly waitForRetry: boolean,
    pollDeferred = false,
  ) {
    const { gate, control } = createEffectGate();
    this.gate = gate;
    this.control = control;
    this.deferredPermits = pollDeferred ? 1 : 0;
  }

  /** Spends the pass's deferred poll permit; false when it has none (left). */
  takeDeferredPermit(): boolean {
    if (this.deferredPermits === 0) return false;
    this.deferredPermits--;
    return true;
  }

  get permits(): number {
    return this.deferredPermits;
  }
}

/**
 * The pass loop: `before_drive` once per installed pass, then reconcile-or-dispatch until the
 * operation settles or reaches a durable wait. Every `continue` must have changed the operation
 * state or made control cancelled; anything else is a procedure that made no progress.
 */
export async function runPass(core: HarnessCore, lane: LaneHandle, drive: Drive): Promise<DriveOutcome> {
  const pass: Pass = {
    core,
    lane,
    operationId: drive.operationId,
    gate: drive.gate,
    waitForRetry: drive.waitForRetry,
    takeDeferredPermit: () => drive.takeDeferredPermit(),
  };
  const opening = lane.state.operation;
  if (opening?.meta.operationId === drive.operationId && opening.state.control.status === "running") {
    try {
      await drive.gate.admit((signal) =>
        core.hooks.runBeforeDrive({ lane: lane.name, runId: drive.operationId, operation: opening.meta.intent.kind }, { signal }),
      );
    } catch (error) {
      if (error instanceof AbortRequested) await error.cancellation;
      else if (!cancelRequested(lane, drive.operationId)) throw new DrivePassFailed(error);
    }
  }
  for (;;) {
    const current = lane.state.operation;
    if (!current || current.meta.operationId !== drive.operationId) return settledRecord(core, lane, drive.operationId);
    const before = current.state;
    let step: Step;
    try {
      step = before.control.status === "cancel_requested" ? await reconcile(pass, before) : await dispatch(pass, before);
    } catch (error) {
      if (error instanceof AbortRequested) {
        await error.cancellation;
        continue;
      }
      // An admitted effect rejected because its signal aborted after the marker committed.
      if (drive.gate.signal.aborted && cancelRequested(lane, drive.operationId)) continue;
      throw error;
    }
    if (step.kind === "settled") return { kind: "settled", outcome: step.record };
    if (step.kind === "waiting") return step.outcome;
    const after = lane.state.operation;
    if (after?.meta.operationId === drive.operationId && after.state === before && after.state.control.status !== "cancel_requested") {
      throw new Error(`Invariant: the ${before.at} procedure continued without progress`);
    }
  }
}

function cancelRequested(lane: LaneHandle, operationId: string): boolean {
  const operation = lane.state.operation;
  return operation?.meta.operationId === operationId && operation.state.control.status === "cancel_requested";
}

function settledRecord(core: HarnessCore, lane: LaneHandle, operationId: string): DriveOutcome {
  const record = readResult(core.session, operationId);
  if (!record) throw new Error(`Invariant: operation ${operationId} left lane ${lane.name} without a record`);
  return { kind: "settled", outcome: record };
}

/** Races the shared completion against only this caller's signal. */
export function observe<T>(completion: Promise<T>, context: { signal?: AbortSignal }): Promise<T> {
  const signal = context.signal;
  if (!signal) return completion;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error("The caller stopped waiting"));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    completion.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
