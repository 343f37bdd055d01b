import { InvalidAddress } from "../../harness/session/addresses.ts";
import {
  BranchExists,
  InvalidBranch,
  InvalidMessage,
  PayloadTooLarge,
  UnknownBranch,
  UnknownTarget,
} from "../../harness/session/errors.ts";
import type { LaneError, Result } from "../../harness/runtime/errors.ts";
import { InvalidLane } from "../../harness/runtime/errors.ts";
import { invalidInputError, type ApiError, type JsonBytes, type RpcJson, type RpcResult } from "../../schema/errors.ts";
import { fromWire, toWire, type Wire } from "../../schema/wire.ts";
import { SecretsKeyMissing } from "../../secrets/secret-box.ts";

/** Raised by the object itself for conditions the session layer does not know about. */
export class RpcError extends Error {
  constructor(readonly error: ApiError) {
    super(error.message);
  }
}

/**
 * A 400 for input the edge's schemas cannot judge (a URL allowed only in local development, a JSON
 * Schema that must compile, a cursor this object issued), in the edge's own form, so a client reads
 * every ValidationFailed alike.
 */
export const invalidInput = (where: string, what: string, details?: Record<string, string>): RpcError => new RpcError(invalidInputError(where, what, details));

/**
 * Expected failures become tagged values; anything else propagates as a bug. Workers RPC keeps
 * only the message of a thrown error, so the tag must travel as data.
 */
export function expectedError(error: unknown): ApiError | undefined {
  if (error instanceof RpcError) return error.error;
  if (error instanceof InvalidBranch) return { code: "InvalidBranch", message: error.message, details: { reason: error.reason } };
  if (error instanceof BranchExists) return { code: "BranchExists", message: error.message, details: { branch: error.branch } };
  if (error instanceof UnknownBranch) return { code: "UnknownBranch", message: error.message, details: { branch: error.branch } };
  if (error instanceof UnknownTarget) return { code: "UnknownTarget", message: error.message, details: { targetId: error.targetId } };
  if (error instanceof InvalidMessage) return { code: "InvalidMessage", message: error.message, details: { reason: error.reason } };
  if (error instanceof InvalidAddress) return { code: "InvalidAddress", message: error.message };
  if (error instanceof InvalidLane) return { code: "InvalidLane", message: error.message };
  if (error instanceof SecretsKeyMissing) return { code: "NotConfigured", message: error.message, details: { secret: "SECRETS_KEY" } };
  if (error instanceof PayloadTooLarge) {
    return { code: "PayloadTooLarge", message: error.message, details: { bytes: error.bytes, limit: error.limit } };
  }
  return undefined;
}

/** Runs one RPC method: its value or its expected failure, as typed JSON text. */
export async function asResult<T>(work: () => T | Promise<T>): Promise<Wire<RpcResult<T>>> {
  let result: RpcResult<T>;
  try {
    result = { ok: true, value: await work() };
  } catch (error) {
    const tagged = expectedError(error);
    if (!tagged) throw error;
    result = { ok: false, error: tagged };
  }
  return toWire(result);
}

/** Runs one read whose answer is already JSON bytes: the bytes, or its expected failure. */
export async function asJson<T>(work: () => JsonBytes<T>): Promise<RpcJson<T>> {
  try {
    return { ok: true, json: work() };
  } catch (error) {
    const tagged = expectedError(error);
    if (!tagged) throw error;
    return { ok: false, error: tagged };
  }
}

/** Decodes a JSON-text argument; text that is not JSON is the caller's error, not a fault. */
export function parseWire<T>(wire: Wire<T>): T {
  try {
    return fromWire(wire);
  } catch {
    throw invalidInput("body", "not valid JSON");
  }
}

/** One message per refusal reason, so a client reading only the message is told the real cause. */
const NAVIGATION_REFUSALS: Record<Extract<LaneError, { code: "InvalidNavigation" }>["reason"], string> = {
  current_tip: "The target is already the lane's tip",
  root_label: "Navigation to the root (null) cannot carry a label",
  summarize_root: "Navigation to the root (null) cannot be summarized: there is no entry to place the summary under",
};

/** The engine's tagged lane errors (reference §2.7) as API errors (ARCHITECTURE D16). */
export function laneApiError(error: LaneError): ApiError {
  switch (error.code) {
    case "LaneBusy":
      return { code: "LaneBusy", message: `Lane ${error.lane} is busy with ${error.operationKind} ${error.operationId}`, details: { lane: error.lane, operationId: error.operationId, operationKind: error.operationKind } };
    case "InvalidMessage":
      return { code: "InvalidMessage", message: `Invalid message (${error.reason})`, details: { reason: error.reason } };
    case "UnknownSkill":
      return { code: "UnknownSkill", message: `No skill named ${error.name}`, details: { name: error.name } };
    case "UnknownTemplate":
      return { code: "UnknownTemplate", message: `No prompt template named ${error.name}`, details: { name: error.name } };
    case "UnknownTarget":
      return { code: "UnknownTarget", message: `Entry ${error.targetId} does not exist`, details: { targetId: error.targetId } };
    case "InvalidNavigation":
      return {
        code: "InvalidNavigation",
        message: NAVIGATION_REFUSALS[error.reason],
        details: { lane: error.lane, reason: error.reason },
      };
    case "OperationMismatch":
      return {
        code: "OperationMismatch",
        message: `Operation ${error.expectedOperationId} is not the current operation of lane ${error.lane}`,
        details: {
          lane: error.lane,
          expectedOperationId: error.expectedOperationId,
          ...(error.currentOperationId !== undefined && { currentOperationId: error.currentOperationId }),
          ...(error.lastOperationId !== undefined && { lastOperationId: error.lastOperationId }),
        },
      };
    case "InvalidOperationId":
      return { code: "InvalidOperationId", message: "An operation id must be a fresh UUIDv7", details: { operationId: error.operationId } };
    case "NoActiveOperation":
      return { code: "NoActiveOperation", message: `Lane ${error.lane} has no active operation` };
    case "NothingToResume":
      return { code: "NothingToResume", message: `Lane ${error.lane} has nothing to resume` };
    case "NothingToCompact":
      return {
        code: "NothingToCompact",
        message:
          `Lane ${error.lane} has nothing to compact: its context is about ${error.estimatedTokens} tokens, and a compaction keeps the newest ` +
          `${error.keepRecentTokens} tokens (settings.compaction.keepRecentTokens, rounded out to whole messages) as they are, which is all of it. ` +
          `To compact a shorter context, lower keepRecentTokens with PATCH /v1/sessions/{sid} {"settings":{"compaction":{"keepRecentTokens":<n>}}}`,
        details: { lane: error.lane, estimatedTokens: error.estimatedTokens, keepRecentTokens: error.keepRecentTokens },
      };
    case "QueueFull":
      if ("pendingRuns" in error) {
        return {
          code: "QueueFull",
          message: `Lane ${error.lane} already holds ${error.pendingRuns} pending runs (at most ${error.maxPendingRuns}): retry once one has started`,
          details: { lane: error.lane, pendingRuns: error.pendingRuns, maxPendingRuns: error.maxPendingRuns },
        };
      }
      return {
        code: "QueueFull",
        message: `The queue of lane ${error.lane} is full (${error.items} items, ${error.bytes} bytes; at most ${error.maxItems} items and ${error.maxBytes} bytes): retry once the lane has taken some`,
        details: { lane: error.lane, items: error.items, bytes: error.bytes, maxItems: error.maxItems, maxBytes: error.maxBytes },
      };
    case "UnknownToolCall":
      return { code: "UnknownToolCall", message: `No client tool call ${error.toolCallId} waits for a result in operation ${error.operationId}`, details: { operationId: error.operationId, toolCallId: error.toolCallId } };
    case "ToolResultConflict":
      return {
        code: "ToolResultConflict",
        message: error.timedOut ? `Tool call ${error.toolCallId} timed out; its result is the timeout error` : `Tool call ${error.toolCallId} already has its result`,
        details: { operationId: error.operationId, toolCallId: error.toolCallId, ...(error.timedOut && { timedOut: true }) },
      };
    case "Closed":
      return { code: "SessionClosed", message: "The session is shutting down; retry the request" };
  }
}

/** Unwraps an engine Result for an RPC method: failures become tagged API errors. */
export function unwrapLane<T>(result: Result<T>): T {
  if (result.ok) return result.value;
  throw new RpcError(laneApiError(result.error));
}
