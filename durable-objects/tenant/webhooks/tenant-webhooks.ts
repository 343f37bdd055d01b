import * as v from "valibot";
import {
  WebhookEventTypeSchema,
  type PatchWebhook,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookEndpoint,
} from "../../../schema/webhooks.ts";
import { decodeTimeCursor, timePage, type Page } from "../time-cursor.ts";
import { parseEvents, WebhookEndpoints, type NewEndpoint } from "./webhook-endpoints.ts";
import type { EnqueuedEvent } from "./webhook-events.ts";
import { nextAttemptAt } from "./webhook-schedule.ts";

export type { NewEndpoint };

/** Finished (delivered or failed) deliveries kept per endpoint: the log shows the latest ones. */
export const KEPT_FINISHED_DELIVERIES = 100;
/** Deliveries that may wait per endpoint; past it the oldest are given up (failed, "backlog full"). */
export const MAX_PENDING_DELIVERIES = 1000;

/**
 * When a finished delivery finished: delivered, or its last attempt (the one that failed it, or the
 * last before it was given up; a give-up before any attempt records its own time there). Creation
 * only for a row an earlier build gave up without one.
 */
const FINISHED_AT = "coalesce(delivered_at, last_attempt_at, created_at)";

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
  nextAttemptAt: number;
}

/** `timedOut`: the endpoint did not answer in time (the run sends it nothing more). */
export type AttemptOutcome = { delivered: true; statusCode: number } | { delivered: false; statusCode?: number; error: string; timedOut?: true };

/**
 * The TenantObject's webhook endpoints (webhook-endpoints.ts) and their durable delivery outbox,
 * which is also the delivery log. Every method is one synchronous SQL turn (D5); sending happens in
 * webhook-delivery.ts between a `due` read and the `recordAttempt` writes, from the alarm only.
 * A disabled endpoint holds no pending delivery and is enqueued none: it is sent nothing.
 */
export class TenantWebhooks {
  private readonly endpoints: WebhookEndpoints;

  constructor(private readonly sql: SqlStorage) {
    this.endpoints = new WebhookEndpoints(sql);
  }

  /** Whether a settlement may be told to an endpoint: the tenant has one (enabled or not). */
  hasEndpoints(): boolean {
    return this.endpoints.registered();
  }

  insert(endpoint: NewEndpoint): WebhookEndpoint {
    return this.endpoints.insert(endpoint);
  }

  /** Every endpoint (at most MAX_WEBHOOK_ENDPOINTS), oldest first, never a secret. */
  list(): WebhookEndpoint[] {
    return this.endpoints.list();
  }

  /**
   * `PATCH /v1/webhooks/{id}`: new subscriptions, and enabling (a disabled endpoint starts a fresh
   * count of failures; an enabled one is left as it is, so a PATCH never postpones a disabling) or
   * disabling (its pending deliveries are given up, as when it is disabled for failing).
   */
  patch(endpointId: string, patch: PatchWebhook, now: number): WebhookEndpoint {
    this.endpoints.require(endpointId);
    if (patch.events) this.endpoints.setEvents(endpointId, patch.events);
    if (patch.enabled === true) this.endpoints.enable(endpointId);
    if (patch.enabled === false) this.disable(endpointId, "disabled by the tenant (PATCH /v1/webhooks/{id})", now);
    return this.endpoints.view(endpointId);
  }

  /** Removes the endpoint and its deliveries: nothing pending is sent to it any more. */
  delete(endpointId: string): void {
    this.endpoints.require(endpointId);
    this.sql.exec("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", endpointId);
    this.endpoints.delete(endpointId);
  }

  /**
   * One delivery per enabled subscribed endpoint and event, due now; an event already enqueued for
   * an endpoint (a forward repeated after a crash) is ignored. Returns how many were new.
   */
  enqueue(events: readonly EnqueuedEvent[], now: number): number {
    if (events.length === 0) return 0;
    let added = 0;
    for (const endpoint of this.endpoints.enabled()) {
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

  /**
   * The deliveries due at `now`: at most `perEndpoint` of each enabled endpoint, oldest due first
   * (the alarm sends one endpoint's deliveries one after another), and `limit` in all, picked a
   * round at a time (every endpoint's oldest due, then every endpoint's next, …) with the endpoints
   * attempted least recently first. So endpoints with a backlog neither fill a batch by themselves
   * nor keep, run after run, the run's first workers from an endpoint the run's budget left out.
   */
  due(now: number, limit: number, perEndpoint: number): DueDelivery[] {
    const queues: { attemptedAt: number; deliveries: DueDelivery[] }[] = [];
    for (const endpoint of this.endpoints.enabled()) {
      const rows = this.sql
        .exec<{ event_id: string; body: string; attempts: number; first_attempt_at: number | null; next_attempt_at: number }>(
          `SELECT event_id, body, attempts, first_attempt_at, next_attempt_at FROM webhook_deliveries
           WHERE endpoint_id = ? AND status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, event_id LIMIT ?`,
          endpoint.endpoint_id,
          now,
          perEndpoint,
        )
        .toArray();
      if (rows.length === 0) continue;
      const attemptedAt = this.sql
        .exec<{ at: number | null }>("SELECT MAX(last_attempt_at) AS at FROM webhook_deliveries WHERE endpoint_id = ?", endpoint.endpoint_id)
        .one().at;
      const deliveries = rows.map((row) => ({
        endpointId: endpoint.endpoint_id,
        eventId: row.event_id,
        url: endpoint.url,
        sealedSecret: endpoint.sealed_secret,
        body: row.body,
        attempts: row.attempts,
        firstAttemptAt: row.first_attempt_at,
        nextAttemptAt: row.next_attempt_at,
      }));
      queues.push({ attemptedAt: attemptedAt ?? 0, deliveries });
    }
    queues.sort((a, b) => a.attemptedAt - b.attemptedAt || (a.deliveries[0]?.nextAttemptAt ?? 0) - (b.deliveries[0]?.nextAttemptAt ?? 0));
    const due: DueDelivery[] = [];
    for (let round = 0; round < perEndpoint; round++) {
      for (const { deliveries } of queues) {
        const delivery = deliveries[round];
        if (delivery && due.length < limit) due.push(delivery);
      }
    }
    return due;
  }

  /** Whether a delivery read by `due` is still to be sent: pending, and its endpoint enabled. */
  stillDue(delivery: DueDelivery): boolean {
    if (!this.endpoints.isEnabled(delivery.endpointId)) return false;
    const row = this.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? AND event_id = ? AND status = 'pending'", delivery.endpointId, delivery.eventId)
      .one();
    return row.n > 0;
  }

  /**
   * Records one attempt made at `at`, and its endpoint's run of failures, which may disable the
   * endpoint. A delivery whose endpoint was deleted or disabled meanwhile is gone or given up and
   * stays so (the update matches nothing, and the endpoint's count is not touched).
   */
  recordAttempt(delivery: DueDelivery, outcome: AttemptOutcome, at: number): void {
    const attempts = delivery.attempts + 1;
    const firstAttemptAt = delivery.firstAttemptAt ?? at;
    const next = outcome.delivered ? undefined : nextAttemptAt(attempts, firstAttemptAt, at);
    const status: WebhookDeliveryStatus = outcome.delivered ? "delivered" : next === undefined ? "failed" : "pending";
    const recorded = this.sql
      .exec(
        `UPDATE webhook_deliveries SET status = ?, attempts = ?, last_status_code = ?, last_error = ?, next_attempt_at = ?,
           first_attempt_at = ?, last_attempt_at = ?, delivered_at = ?
         WHERE endpoint_id = ? AND event_id = ? AND status = 'pending' RETURNING event_id`,
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
      )
      .toArray().length;
    if (recorded === 0) return;
    if (status !== "pending") this.pruneFinished(delivery.endpointId);
    if (outcome.delivered) {
      this.endpoints.recordSuccess(delivery.endpointId);
      return;
    }
    const reason = this.endpoints.recordFailure(delivery.endpointId, at, outcome.error);
    if (reason) this.disable(delivery.endpointId, reason, at);
  }

  /** When the next pending delivery is due, if any. */
  nextDue(): number | undefined {
    return this.sql.exec<{ due: number | null }>("SELECT MIN(next_attempt_at) AS due FROM webhook_deliveries WHERE status = 'pending'").one().due ?? undefined;
  }

  /** An endpoint's delivery log in creation order, a page at a time. */
  deliveries(endpointId: string, limit: number, cursor: string | undefined): Page<WebhookDelivery> {
    // A malformed cursor is the request's own fault (400), whatever endpoint it names.
    const after = decodeTimeCursor("delivery", cursor);
    this.endpoints.require(endpointId);
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
    return timePage("delivery", rows, limit, (row) => row.created_at, (row) => row.event_id, deliveryView);
  }

  /** Disables an enabled endpoint and gives up its pending deliveries: it is sent nothing more. */
  private disable(endpointId: string, reason: string, at: number): void {
    if (!this.endpoints.disable(endpointId, reason, at)) return;
    // A delivery given up before any attempt finishes now, as one the backlog gives up (`boundPending`).
    this.sql.exec(
      `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_attempt_at = coalesce(last_attempt_at, ?),
         last_error = 'given up: the endpoint was disabled' || coalesce(' (the last attempt: ' || last_error || ')', '')
       WHERE endpoint_id = ? AND status = 'pending'`,
      at,
      endpointId,
    );
    this.pruneFinished(endpointId);
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

  /**
   * Keeps the KEPT_FINISHED_DELIVERIES that finished last, by when they finished, not when they
   * were created: a delivery that fails after a day of retries is the one its tenant needs to see,
   * however many newer ones were delivered meanwhile.
   */
  private pruneFinished(endpointId: string): void {
    this.sql.exec(
      `DELETE FROM webhook_deliveries WHERE endpoint_id = ? AND status != 'pending' AND (${FINISHED_AT}, event_id) < (
         SELECT ${FINISHED_AT}, event_id FROM webhook_deliveries WHERE endpoint_id = ? AND status != 'pending'
         ORDER BY ${FINISHED_AT} DESC, event_id DESC LIMIT 1 OFFSET ?)`,
      endpointId,
      endpointId,
      KEPT_FINISHED_DELIVERIES - 1,
    );
  }
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
