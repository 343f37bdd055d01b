import { OUTBOX_MAX_AGE_MS } from "../../session/due-work/settlement-outbox.ts";
import type { EnqueuedEvent } from "./webhook-events.ts";

/**
 * How long the tenant remembers an event id it enqueued: longer than a session may repeat the
 * forward that carries it (a settlement is given up OUTBOX_MAX_AGE_MS after it settled, and its
 * first application can only come later), with a day to spare.
 */
export const EVENT_ID_RETENTION_MS = OUTBOX_MAX_AGE_MS + 24 * 3_600_000;

/**
 * The ids of the webhook events the tenant enqueued, kept EVENT_ID_RETENTION_MS. The delivery log
 * cannot dedupe on its own: it keeps only the latest finished deliveries per endpoint, so a
 * forward repeated after its delivery was pruned would enqueue it again. Only a tenant with
 * endpoints records ids (without one there is nothing to enqueue twice); every settlement forward
 * with an event drops the ids past the retention. One synchronous SQL turn
 * per call, inside the caller's transaction, so an id is remembered exactly when its deliveries
 * are enqueued.
 */
export class WebhookEventIds {
  constructor(private readonly sql: SqlStorage) {}

  /** The events not enqueued within the retention window, now remembered as enqueued. */
  claim(events: readonly EnqueuedEvent[], now: number): EnqueuedEvent[] {
    if (events.length === 0) return [];
    // Pruned first, with or without endpoints: a tenant that deleted its last one still forgets
    // what it remembered (an index range, empty most of the time).
    this.sql.exec("DELETE FROM webhook_event_ids WHERE enqueued_at < ?", now - EVENT_ID_RETENTION_MS);
    if (this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_endpoints").one().n === 0) return [];
    return events.filter(
      (event) =>
        this.sql.exec("INSERT INTO webhook_event_ids (event_id, enqueued_at) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING RETURNING event_id", event.id, now).toArray().length > 0,
    );
  }
}
