import type { OperationResultRecord } from "../../../schema/lane.ts";
import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import type { Entry } from "../../../schema/entries.ts";
import type { HarnessEvent, ToolResultView } from "../../../schema/lane.ts";
import type { Gate } from "../../execution/effect-gate.ts";
import type { HarnessCore } from "../core.ts";
import type { LaneProjection } from "../lane-state.ts";
import type { DriveOutcome, OperationMeta, OperationState } from "../types.ts";

/** The lane as a drive procedure sees it: its name and authoritative projection. */
export interface LaneHandle {
  readonly name: string;
  readonly state: LaneProjection;
  publish(next: LaneProjection): void;
  /**
   * The provider's live partial of the streaming response (snapshot precedence, §5.3), by
   * reference, and how to take the update watchers have not been sent yet (a snapshot capture
   * sends it first, so that later deltas apply on top of the captured partial).
   */
  setStreaming(partial: ProviderAssistant, pendingUpdate: () => HarnessEvent | undefined): void;
  /** Clears the live partial (on the line, by its settlement); returns what was set. */
  takeStreaming(): ProviderAssistant | undefined;
  /**
   * The latest live update of a running tool call (a snapshot shows it before the stored
   * checkpoint, as watchers folding `tool_update` do); undefined forgets it.
   */
  setToolPartial(toolCallId: string, partial: ToolResultView | undefined): void;
  /**
   * The compaction-bounded path ending at the lane's tip, oldest first (the canonical context
   * read, §1.6): kept warm by the lane (QUALITY P11), else read from storage. Frozen: never mutate.
   */
  contextPath(): readonly Entry[];
  /**
   * True once for a request intent this process committed with the run's acceptance and has not
   * sent (first-request.ts): the pass sends it instead of recovering an unknown outcome.
   */
  takeRequestPermit(operationId: string, responseEntryId: string): boolean;
}

/** One process-local pass over one operation (reference §4.1). */
export interface Pass {
  readonly core: HarnessCore;
  readonly lane: LaneHandle;
  readonly operationId: string;
  readonly gate: Gate;
  readonly waitForRetry: boolean;
  /**
   * Spends the pass's one deferred poll permit (installed with `pollDeferred`); a pass without
   * one leaves a suspended run suspended (`waiting{deferred}`, §4.6). Joiners never add permits.
   */
  takeDeferredPermit(): boolean;
}

/** What a procedure hands back to the loop. */
export type Step =
  | { kind: "continue" }
  | { kind: "waiting"; outcome: DriveOutcome }
  | { kind: "settled"; record: OperationResultRecord };

export const CONTINUE: Step = { kind: "continue" };

export function currentOperation(pass: Pass): { meta: OperationMeta; state: OperationState } {
  const operation = pass.lane.state.operation;
  if (!operation || operation.meta.operationId !== pass.operationId) {
    throw new Error(`Operation ${pass.operationId} is not current on lane ${pass.lane.name}`);
  }
  return operation;
}
