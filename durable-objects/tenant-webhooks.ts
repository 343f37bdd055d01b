import * as v from "valibot";
import {
  MAX_WEBHOOK_ENDPOINTS,
  WebhookEventTypeSchema,
  type OperationSettledData,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookEndpoint,
  type WebhookEvent,
  type WebhookEventType,
} from "../schema/webhooks.ts";
import { RpcError } from "./rpc-errors.ts";
import type { SettledOperation } from "./session/settlement-outbox.ts";
import { decodeTimeCursor, timePage, type Page } from "./time-cursor.ts";

/** Finished (delivered or failed) deliveries kept per endpoint: the log shows the latest ones. */
export const KEPT_FINISHED_DELIVERIES = 100;
/** Deliveries that may wait per endpoint; past it the oldest are given up (failed, "backlog full"). */
export const MAX_PENDING_DELIVERIES = 1000;
/** Waits after the 1st, 2nd, … failed attempt; every later one waits the last of them. */
const HOURLY_MS = 3_600_000;
export const RETRY_DELAYS_MS = [10_000, 30_000, 120_000, 600_000, 1_800_000, HOURLY_MS] as const;
/** A delivery is retried for at least this long after its first attempt, then it has failed. */
export const RETRY_WINDOW_MS = 24 * 3_600_000;

type EndpointRow = { endpoint_id: string; url: string; events: string; sealed_secret: string; created_at: number };

type DeliveryRow = {
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
  created_at: number;
  first_attempt_at: number | null;
  last_attempt_at: number | null;
  delivered_at: number | null;
};

/** One attempt the alarm makes: everything it needs, read before any await. */
export interface DueDelivery {
  endpointId: string;
  eventId: string;
  url: string;
  sealedSecret: string;
  body: string;
  attempts: number;
  firstAttemptAt: number | null;
}

export type AttemptOutcome = { delivered: true; statusCode: number } | { delivered: false; statusCode?: number; error: string };

/** A new endpoint, its secret already sealed (the seal is awaited before the writing turn). */
export interface NewEndpoint {
  id: string;
  url: string;
  events: readonly WebhookEventType[];
  sealedSecret: string;
  createdAt: number;
}

/** An event to enqueue for every endpoint subscribed to its type. */
export interface EnqueuedEvent {
  id: string;
  type: WebhookEventType;
  body: string;
}

/**
 * The TenantObject's webhook endpoints and their durable delivery outbox, which is also the
 * delivery log. Every method is one synchronous SQL turn (D5); sending happens in
 * webhook-delivery.ts between a `due` read and the `recordAttempt` writes, from the alarm only.
 */
export class TenantWebhooks {
  constructor(private readonly sql: SqlStorage) {}

  insert(endpoint: NewEndpoint): WebhookEndpoint {
    const { n } = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_endpoints").one();
    if (n >= MAX_WEBHOOK_ENDPOINTS) {
      throw new RpcError({
        code: "LimitExceeded",
        message: `A tenant may register at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one first`,
        details: { resource: "webhooks", limit: MAX_WEBHOOK_ENDPOINTS },
      });
    }
    const events = [...new Set(endpoint.events)];
    this.sql.exec(
      "INSERT INTO webhook_endpoints (endpoint_id, url, events, sealed_secret, created_at) VALUES (?, ?, ?, ?, ?)",
      endpoint.id,
      endpoint.url,
      JSON.stringify(events),
      endpoint.sealedSecret,
      endpoint.createdAt,
    );
    return { id: endpoint.id, url: endpoint.url, events, createdAt: endpoint.createdAt };
  }

  /** Every endpoint (at most MAX_WEBHOOK_ENDPOINTS), oldest first, never a secret. */
  list(): WebhookEndpoint[] {
    return this.sql
      .exec<EndpointRow>("SELECT endpoint_id, url, events, sealed_secret, created_at FROM webhook_endpoints ORDER BY created_at, endpoint_id")
      .toArray()
      .map(endpointView);
  }

  /** Removes the endpoint and its deliveries: nothing pending is sent to it any more. */
  delete(endpointId: string): void {
    this.requireEndpoint(endpointId);
    this.sql.exec("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", endpointId);
    this.sql.exec("DELETE FROM webhook_endpoints WHERE endpoint_id = ?", endpointId);
  }

  /**
   * One delivery per subscribed endpoint and event, due now; an event already enqueued for an
   * endpoint (a forward repeated after a crash) is ignored. Returns how many were new.
   */
  enqueue(events: readonly EnqueuedEvent[], now: number): number {
    if (events.length === 0) return 0;
    const endpoints = this.sql.exec<EndpointRow>("SELECT endpoint_id, url, events, sealed_secret, created_at FROM webhook_endpoints").toArray();
    let added = 0;
    for (const endpoint of endpoints) {
      const subscribed = new Set(parseEvents(endpoint.events));
      for (const event of events) {
        if (!subscribed.has(event.type)) continue;
        added += this.sql
          .exec(
            `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, body, status, next_attempt_at, created_at)
             VALUES (?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING event_id`,
            endpoint.endpoint_id,
            event.id,
            event.type,
            event.body,
            now,
            now,
          )
          .toArray().length;
      }
      this.boundPending(endpoint.endpoint_id, now);
    }
    return added;
  }

  /** The deliveries due at `now`, oldest due first, with what sending them needs. */
  due(now: number, limit: number): DueDelivery[] {
    return this.sql
      .exec<{ endpoint_id: string; event_id: string; url: string; sealed_secret: string; body: string; attempts: number; first_attempt_at: number | null }>(
        `SELECT d.endpoint_id, d.event_id, e.url, e.sealed_secret, d.body, d.attempts, d.first_attempt_at
         FROM webhook_deliveries d JOIN webhook_endpoints e ON e.endpoint_id = d.endpoint_id
         WHERE d.status = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at LIMIT ?`,
        now,
        limit,
      )
      .toArray()
      .map((row) => ({
        endpointId: row.endpoint_id,
        eventId: row.event_id,
        url: row.url,
        sealedSecret: row.sealed_secret,
        body: row.body,
        attempts: row.attempts,
        firstAttemptAt: row.first_attempt_at,
      }));
  }

  /**
   * Records one attempt made at `at`. A delivery whose endpoint was deleted meanwhile is gone and
   * stays gone (the update matches nothing); one that was already finished is left as it is.
   */
  recordAttempt(delivery: DueDelivery, outcome: AttemptOutcome, at: number): void {
    const attempts = delivery.attempts + 1;
    const firstAttemptAt = delivery.firstAttemptAt ?? at;
    const next = outcome.delivered ? undefined : nextAttemptAt(attempts, firstAttemptAt, at);
    const status: WebhookDeliveryStatus = outcome.delivered ? "delivered" : next === undefined ? "failed" : "pending";
    this.sql.exec(
      `UPDATE webhook_deliveries SET status = ?, attempts = ?, last_status_code = ?, last_error = ?, next_attempt_at = ?,
         first_attempt_at = ?, last_attempt_at = ?, delivered_at = ?
       WHERE endpoint_id = ? AND event_id = ? AND status = 'pending'`,
      status,
      attempts,
      outcome.statusCode ?? null,
      outcome.delivered ? null : outcome.error,
      next ?? null,
      firstAttemptAt,
      at,
      outcome.delivered ? at : null,
      delivery.endpointId,
      delivery.eventId,
    );
    if (status !== "pending") this.pruneFinished(delivery.endpointId);
  }

  /** When the next pending delivery is due, if any. */
  nextDue(): number | undefined {
    return this.sql.exec<{ due: number | null }>("SELECT MIN(next_attempt_at) AS due FROM webhook_deliveries WHERE status = 'pending'").one().due ?? undefined;
  }

  /** An endpoint's delivery log in creation order, a page at a time. */
  deliveries(endpointId: string, limit: number, cursor: string | undefined): Page<WebhookDelivery> {
    // A malformed cursor is the request's own fault (400), whatever endpoint it names.
    const after = decodeTimeCursor(cursor);
    this.requireEndpoint(endpointId);
    const rows = this.sql
      .exec<DeliveryRow>(
        `SELECT endpoint_id, event_id, event_type, status, attempts, last_status_code, last_error, next_attempt_at, created_at,
           first_attempt_at, last_attempt_at, delivered_at
         FROM webhook_deliveries WHERE endpoint_id = ? AND (created_at, event_id) > (?, ?) ORDER BY created_at, event_id LIMIT ?`,
        endpointId,
        after.at,
        after.id,
        limit + 1,
      )
      .toArray();
    return timePage(rows, limit, (row) => row.created_at, (row) => row.event_id, deliveryView);
  }

  private requireEndpoint(endpointId: string): void {
    const { n } = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_endpoints WHERE endpoint_id = ?", endpointId).one();
    if (n === 0) throw new RpcError({ code: "NotFound", message: `No webhook endpoint ${endpointId}` });
  }

  /** Past MAX_PENDING_DELIVERIES waiting for one endpoint, the oldest are given up. */
  private boundPending(endpointId: string, now: number): void {
    const dropped = this.sql
      .exec(
        `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = ?, last_attempt_at = coalesce(last_attempt_at, ?)
         WHERE endpoint_id = ? AND status = 'pending' AND (created_at, event_id) < (
           SELECT created_at, event_id FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'pending'
           ORDER BY created_at DESC, event_id DESC LIMIT 1 OFFSET ?)
         RETURNING event_id`,
        `backlog full: more than ${MAX_PENDING_DELIVERIES} deliveries were waiting`,
        now,
        endpointId,
        endpointId,
        MAX_PENDING_DELIVERIES - 1,
      )
      .toArray().length;
    if (dropped > 0) this.pruneFinished(endpointId);
  }

  private pruneFinished(endpointId: string): void {
    this.sql.exec(
      `DELETE FROM webhook_deliveries WHERE endpoint_id = ? AND status != 'pending' AND (created_at, event_id) < (
         SELECT created_at, event_id FROM webhook_deliveries WHERE endpoint_id = ? AND status != 'pending'
         ORDER BY created_at DESC, event_id DESC LIMIT 1 OFFSET ?)`,
      endpointId,
      endpointId,
      KEPT_FINISHED_DELIVERIES - 1,
    );
  }
}

/**
 * When a delivery that failed its `attempts`-th attempt at `at` is tried again, or undefined once
 * the retry window after its first attempt has passed (it has failed).
 */
export function nextAttemptAt(attempts: number, firstAttemptAt: number, at: number): number | undefined {
  if (at - firstAttemptAt >= RETRY_WINDOW_MS) return undefined;
  const delays: readonly number[] = RETRY_DELAYS_MS;
  return at + (delays[Math.min(Math.max(attempts, 1), delays.length) - 1] ?? HOURLY_MS);
}

/**
 * The event of one settled operation, with an id derived from session and operation: the same on
 * every forward of that settlement, so a repeated forward enqueues nothing twice and receivers can
 * dedupe by it. Undefined for an operation that left no result record (nothing to tell).
 */
export async function settledEvent(sessionId: string, operation: SettledOperation): Promise<EnqueuedEvent | undefined> {
  const result = operation.result;
  if (!result) return undefined;
  const type: WebhookEventType = "operation.settled";
  const id = `evt_${(await sha256Hex(`${type}\n${sessionId}\n${operation.operationId}`)).slice(0, 32)}`;
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

/** A run a session registered as suspended (deferred-registrations.ts): what its webhook tells. */
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

function parseEvents(stored: string): WebhookEventType[] {
  const parsed: unknown = JSON.parse(stored);
  return Array.isArray(parsed) ? parsed.filter((event) => v.is(WebhookEventTypeSchema, event)) : [];
}

function endpointView(row: EndpointRow): WebhookEndpoint {
  return { id: row.endpoint_id, url: row.url, events: parseEvents(row.events), createdAt: row.created_at };
}

function deliveryView(row: DeliveryRow): WebhookDelivery {
  return {
    eventId: row.event_id,
    type: v.is(WebhookEventTypeSchema, row.event_type) ? row.event_type : "operation.settled",
    status: row.status === "delivered" || row.status === "failed" ? row.status : "pending",
    attempts: row.attempts,
    ...(row.last_status_code !== null && { lastStatusCode: row.last_status_code }),
    ...(row.last_error !== null && { lastError: row.last_error }),
    nextAttemptAt: row.status === "pending" ? row.next_attempt_at : null,
    createdAt: row.created_at,
    ...(row.last_attempt_at !== null && { lastAttemptAt: row.last_attempt_at }),
    ...(row.delivered_at !== null && { deliveredAt: row.delivered_at }),
  };
}
