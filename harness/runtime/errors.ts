import type { OperationKind } from "../../schema/lane.ts";

// The tagged error vocabulary of reference §2.7: expected failures travel in Result values.

export type LaneError =
  | { code: "LaneBusy"; lane: string; operationId: string; operationKind: OperationKind }
  | { code: "InvalidMessage"; lane: string; reason: "empty" | "pending_assistant" | "images_with_non_user" }
  | { code: "UnknownSkill"; name: string }
  | { code: "UnknownTemplate"; name: string }
  | { code: "UnknownTarget"; targetId: string }
  | { code: "InvalidNavigation"; lane: string; reason: "current_tip" | "root_label" | "summarize_root" }
  | {
      code: "OperationMismatch";
      lane: string;
      expectedOperationId: string;
      currentOperationId?: string;
      lastOperationId?: string;
    }
  | { code: "InvalidOperationId"; operationId: string }
  | { code: "NoActiveOperation"; lane: string }
  | { code: "NothingToResume"; lane: string }
  | { code: "NothingToCompact"; lane: string; estimatedTokens: number; keepRecentTokens: number }
  | { code: "QueueFull"; lane: string; items: number; bytes: number; maxItems: number; maxBytes: number }
  /** The lane already holds its most pending runs (pending-runs.ts). */
  | { code: "QueueFull"; lane: string; pendingRuns: number; maxPendingRuns: number }
  | { code: "UnknownToolCall"; operationId: string; toolCallId: string }
  | { code: "ToolResultConflict"; operationId: string; toolCallId: string; timedOut?: true }
  | { code: "Closed" };

export type Result<T, E extends LaneError = LaneError> = { ok: true; value: T } | { ok: false; error: E };

export const ok = <T>(value: T): { ok: true; value: T } => ({ ok: true, value });
export const err = <E extends LaneError>(error: E): { ok: false; error: E } => ({ ok: false, error });

/** Thrown for an invalid lane name (empty or containing NUL). */
export class InvalidLane extends Error {
  override readonly name = "InvalidLane";
}
