import type { OperationResultRecord } from "../../schema/lane.ts";
import type { AgentMessage, DeferredHandle } from "../../schema/messages.ts";
import type { AbortRequestResult, OperationAdmission } from "../../schema/lane-answers.ts";
import type { CompactionRequest, NavigationRequest, OperationRequest } from "./acceptance.ts";
import { err, ok, type Result } from "./errors.ts";
import type { LaneProjection } from "./lane-state.ts";
import type { AcceptOptions, DriveOptions, DriveOutcome } from "./types.ts";

// The conveniences of reference §3.9 are exactly these compositions of the lane's primitives: the
// same writes and events as a caller issuing the primitives itself (tested), no other scheduling.

/** The lane primitives the conveniences compose; AgentLane has them (named here so this module does not import the lane). */
export interface LanePrimitives {
  readonly name: string;
  readonly state: LaneProjection;
  accept(request: OperationRequest, options?: AcceptOptions): Promise<Result<OperationAdmission>>;
  drive(options: DriveOptions): Promise<Result<DriveOutcome>>;
  requestAbort(operationId: string): Promise<Result<AbortRequestResult>>;
  nextToolResult(): Promise<void>;
}

/** A run that deferred: convenience-only, never stored. */
export interface SuspendedRun {
  operationId: string;
  status: "suspended";
  deferred: DeferredHandle;
}

export interface AbortResult {
  operationId: string;
  steer: AgentMessage[];
  followUp: AgentMessage[];
  record?: OperationResultRecord;
}

/**
 * prompt / skill / promptFromTemplate = accept, then drive({waitForRetry: true}); driven at once,
 * the acceptance may carry the first request intent (first-request.ts: the same outcome).
 */
export async function acceptAndDrive(lane: LanePrimitives, request: OperationRequest): Promise<Result<OperationResultRecord | SuspendedRun>> {
  const admitted = await lane.accept(request, { drivenAtOnce: true });
  if (!admitted.ok) return admitted;
  return driveToResult(lane, admitted.value.operationId);
}

/** A structural convenience's answer: its own record, and the continuation run's when one ran. */
export interface StructuralOutcome {
  navigation: OperationResultRecord;
  run?: OperationResultRecord | SuspendedRun;
}

/**
 * navigate = accept(navigation) + drive, then — unless it was aborted — the continuation run B:
 * an empty-prompt acceptance, valid only when eligible non-write input is queued (§3.1, §3.9).
 */
export async function navigateAndContinue(lane: LanePrimitives, request: NavigationRequest): Promise<Result<StructuralOutcome>> {
  const done = await structuralThenContinue(lane, request);
  return done.ok ? ok({ navigation: done.value.record, ...(done.value.run && { run: done.value.run }) }) : done;
}

/** The compact convenience's answer: the compaction's record, and the continuation run's when one ran. */
export interface CompactionOutcome {
  compaction: OperationResultRecord;
  run?: OperationResultRecord | SuspendedRun;
}

/** compact = accept(compaction) + drive, then the continuation run B exactly as navigate does. */
export async function compactAndContinue(lane: LanePrimitives, request: CompactionRequest): Promise<Result<CompactionOutcome>> {
  const done = await structuralThenContinue(lane, request);
  return done.ok ? ok({ compaction: done.value.record, ...(done.value.run && { run: done.value.run }) }) : done;
}

async function structuralThenContinue(
  lane: LanePrimitives,
  request: NavigationRequest | CompactionRequest,
): Promise<Result<{ record: OperationResultRecord; run?: OperationResultRecord | SuspendedRun }>> {
  const admitted = await lane.accept(request);
  if (!admitted.ok) return admitted;
  const structural = await driveToResult(lane, admitted.value.operationId);
  if (!structural.ok) return structural;
  const record = structural.value;
  if (!("kind" in record)) throw new Error(`Invariant: a ${request.kind} never suspends`);
  if (record.status === "aborted") return ok({ record });
  const continuation = await lane.accept({ kind: "prompt", prompt: "" });
  if (!continuation.ok) return ok({ record });
  const run = await driveToResult(lane, continuation.value.operationId);
  return run.ok ? ok({ record, run: run.value }) : run;
}

/** resume = inspect the current id, then drive it with one deferred poll permit. */
export async function resumeCurrent(lane: LanePrimitives): Promise<Result<OperationResultRecord | SuspendedRun>> {
  const current = lane.state.operation;
  if (!current) return err({ code: "NothingToResume", lane: lane.name });
  return driveToResult(lane, current.meta.operationId, true);
}

/** abort = inspect the current id, requestAbort it, then drive it to observe reconciliation. */
export async function abortCurrent(lane: LanePrimitives): Promise<Result<AbortResult>> {
  const current = lane.state.operation;
  if (!current) return err({ code: "NoActiveOperation", lane: lane.name });
  const operationId = current.meta.operationId;
  const requested = await lane.requestAbort(operationId);
  if (!requested.ok) return requested;
  const driven = await lane.drive({ operationId });
  const record = driven.ok && driven.value.kind === "settled" ? driven.value.outcome : undefined;
  return ok({ operationId, steer: requested.value.steer, followUp: requested.value.followUp, ...(record && { record }) });
}

async function driveToResult(lane: LanePrimitives, operationId: string, pollDeferred = false): Promise<Result<OperationResultRecord | SuspendedRun>> {
  for (;;) {
    const driven = await lane.drive({ operationId, waitForRetry: true, ...(pollDeferred && { pollDeferred }) });
    if (!driven.ok) return driven;
    const outcome = driven.value;
    if (outcome.kind === "settled") return ok(outcome.outcome);
    if (outcome.reason === "deferred") return ok({ operationId, status: "suspended", deferred: outcome.deferred });
    // Every open call waits for a client: wait here until one of them gets its result.
    if (outcome.reason === "client_tool") await lane.nextToolResult();
    // A joined pass installed without waitForRetry (joiner options are ignored) stopped at its
    // retry wait: the operation is still current, so drive it again, this time waiting.
  }
}
