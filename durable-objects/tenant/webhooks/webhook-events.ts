import type { OperationSettledData, WebhookEvent, WebhookEventType } from "../../../schema/webhooks.ts";
import type { SettledOperation } from "../../session/due-work/settlement-outbox.ts";

// The events the tenant's webhooks deliver (tenant-webhooks.ts enqueues them): their ids, derived
// from what they tell, so that a repeated forward enqueues nothing twice, and their JSON bodies.

/** An event to enqueue for every endpoint subscribed to its type. */
export interface EnqueuedEvent {
  id: string;
  type: WebhookEventType;
  body: string;
}

/**
 * The event of one settled operation, with an id derived from session, operation and the record's
 * end: the same on every forward of that settlement (the record never changes), so a repeated
 * forward enqueues nothing twice and receivers can dedupe by it. The end tells apart the
 * operations of a session deleted and created again under its id, which may reuse an operation
 * id (it is unique within a session only). Undefined for an operation that left no result record.
 */
export async function settledEvent(sessionId: string, operation: SettledOperation): Promise<EnqueuedEvent | undefined> {
  const result = operation.result;
  if (!result) return undefined;
  const type: WebhookEventType = "operation.settled";
  const id = `evt_${(await sha256Hex(`${type}\n${sessionId}\n${operation.operationId}\n${result.endedAt}`)).slice(0, 32)}`;
  const data: OperationSettledData = {
    sessionId,
    lane: operation.lane,
    operationId: operation.operationId,
    kind: result.kind,
    status: result.status,
    ...(result.error && { error: { code: result.error.code, message: result.error.message } }),
  };
  const event: WebhookEvent = { id, type, createdAt: result.endedAt, data };
  return { id, type, body: JSON.stringify(event) };
}

/** A run a session registered as suspended (session/due-work/deferred-registrations.ts): what its webhook tells. */
export interface SuspendedRun {
  operationId: string;
  lane: string;
  pollAt: number;
}

/** One `operation.suspended` event per suspension (a run may suspend again at a later poll time). */
export async function suspendedEvent(sessionId: string, run: SuspendedRun, now: number): Promise<EnqueuedEvent> {
  const type: WebhookEventType = "operation.suspended";
  const id = `evt_${(await sha256Hex(`${type}\n${sessionId}\n${run.operationId}\n${run.pollAt}`)).slice(0, 32)}`;
  const event: WebhookEvent = { id, type, createdAt: now, data: { sessionId, lane: run.lane, operationId: run.operationId, pollAt: run.pollAt } };
  return { id, type, body: JSON.stringify(event) };
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}
