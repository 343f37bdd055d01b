import { InvalidAddress } from "../harness/session/addresses.ts";
import {
  BranchExists,
  InvalidBranch,
  InvalidMessage,
  PayloadTooLarge,
  UnknownBranch,
  UnknownTarget,
} from "../harness/session/errors.ts";
import type { ApiError, RpcResult } from "../schema/errors.ts";
import { fromWire, toWire, type Wire } from "../schema/wire.ts";

/** Raised by the object itself for conditions the session layer does not know about. */
export class RpcError extends Error {
  constructor(readonly error: ApiError) {
    super(error.message);
  }
}

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

/** Decodes a JSON-text argument; text that is not JSON is the caller's error, not a fault. */
export function parseWire<T>(wire: Wire<T>): T {
  try {
    return fromWire(wire);
  } catch {
    throw new RpcError({ code: "ValidationFailed", message: "The body is not valid JSON" });
  }
}
