import * as v from "valibot";
import {
  MAX_WEBHOOK_ENDPOINTS,
  MAX_WEBHOOKS_PER_HOST,
  WebhookEventTypeSchema,
  type WebhookEndpoint,
  type WebhookEventType,
} from "../../../schema/webhooks.ts";
import { destinationHost } from "../../../schema/egress-policy.ts";
import { RpcError } from "../../rpc/rpc-errors.ts";
import { disablingReason } from "./webhook-schedule.ts";

/** A new endpoint, its secret already sealed (the seal is awaited before the writing turn). */
export interface NewEndpoint {
  id: string;
  url: string;
  events: readonly WebhookEventType[];
  sealedSecret: string;
  createdAt: number;
}

export type EndpointRow = {
  endpoint_id: string;
  url: string;
  events: string;
  sealed_secret: string;
  created_at: number;
  disabled_at: number | null;
  disabled_reason: string | null;
  failing_since: number | null;
  consecutive_failures: number;
};

const COLUMNS = "endpoint_id, url, events, sealed_secret, created_at, disabled_at, disabled_reason, failing_since, consecutive_failures";

/**
 * The TenantObject's webhook endpoints (tenant-webhooks.ts holds their deliveries): the
 * registration limits, the subscriptions, and each endpoint's run of failed attempts, which
 * disables it past the limits of webhook-schedule.ts. Every method is one synchronous SQL turn.
 */
export class WebhookEndpoints {
  constructor(private readonly sql: SqlStorage) {}

  /**
   * Registers an endpoint within the limits, checked in the writing turn: one endpoint per URL
   * (409 WebhookExists naming it), MAX_WEBHOOK_ENDPOINTS in all, MAX_WEBHOOKS_PER_HOST per host.
   */
  insert(endpoint: NewEndpoint): WebhookEndpoint {
    const existing = this.rows();
    const destination = destinationOf(endpoint.url);
    const same = existing.find((row) => destinationOf(row.url).url === destination.url);
    if (same) {
      throw new RpcError({
        code: "WebhookExists",
        message: `Webhook endpoint ${same.endpoint_id} already has this URL; change its events with PATCH /v1/webhooks/${same.endpoint_id}, or delete it first`,
        details: { webhookId: same.endpoint_id },
      });
    }
    if (existing.length >= MAX_WEBHOOK_ENDPOINTS) {
      throw new RpcError({
        code: "LimitExceeded",
        message: `A tenant may register at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one first`,
        details: { resource: "webhooks", limit: MAX_WEBHOOK_ENDPOINTS },
      });
    }
    if (existing.filter((row) => destinationOf(row.url).host === destination.host).length >= MAX_WEBHOOKS_PER_HOST) {
      throw new RpcError({
        code: "LimitExceeded",
        message: `A tenant may register at most ${MAX_WEBHOOKS_PER_HOST} webhook endpoints on one host (${destination.host}); delete one there first`,
        details: { resource: "webhooks_per_host", limit: MAX_WEBHOOKS_PER_HOST, host: destination.host },
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
    return this.view(endpoint.id);
  }

  /** Every endpoint (at most MAX_WEBHOOK_ENDPOINTS), oldest first, never a secret. */
  list(): WebhookEndpoint[] {
    return this.rows().map(endpointView);
  }

  /** The endpoint's row; 404 NotFound when the tenant has none of that id. */
  require(endpointId: string): EndpointRow {
    const row = this.sql.exec<EndpointRow>(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE endpoint_id = ?`, endpointId).toArray()[0];
    if (!row) throw new RpcError({ code: "NotFound", message: `No webhook endpoint ${endpointId}` });
    return row;
  }

  view(endpointId: string): WebhookEndpoint {
    return endpointView(this.require(endpointId));
  }

  /** Whether the tenant has an endpoint, disabled ones included (they may be enabled again). */
  registered(): boolean {
    return this.sql.exec("SELECT 1 FROM webhook_endpoints LIMIT 1").toArray().length > 0;
  }

  /** The endpoints that are sent deliveries: every one not disabled. */
  enabled(): EndpointRow[] {
    return this.sql.exec<EndpointRow>(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE disabled_at IS NULL ORDER BY created_at, endpoint_id`).toArray();
  }

  isEnabled(endpointId: string): boolean {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_endpoints WHERE endpoint_id = ? AND disabled_at IS NULL", endpointId).one().n > 0;
  }

  setEvents(endpointId: string, events: readonly WebhookEventType[]): void {
    this.sql.exec("UPDATE webhook_endpoints SET events = ? WHERE endpoint_id = ?", JSON.stringify([...new Set(events)]), endpointId);
  }

  /** A successful attempt ends the endpoint's run of failures (no write when there was none). */
  recordSuccess(endpointId: string): void {
    this.sql.exec(
      "UPDATE webhook_endpoints SET consecutive_failures = 0, failing_since = NULL WHERE endpoint_id = ? AND (consecutive_failures != 0 OR failing_since IS NOT NULL)",
      endpointId,
    );
  }

  /** A failed attempt at `at` grows the endpoint's run of failures; answers why it now disables the endpoint, if it does. */
  recordFailure(endpointId: string, at: number, error: string): string | undefined {
    const streak = this.sql
      .exec<{ consecutive_failures: number; failing_since: number }>(
        `UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1, failing_since = coalesce(failing_since, ?)
         WHERE endpoint_id = ? AND disabled_at IS NULL RETURNING consecutive_failures, failing_since`,
        at,
        endpointId,
      )
      .toArray()[0];
    return streak && disablingReason({ failedAttempts: streak.consecutive_failures, failingSince: streak.failing_since }, at, error);
  }

  /** Marks an enabled endpoint disabled; false when it was not enabled (already disabled or gone). */
  disable(endpointId: string, reason: string, at: number): boolean {
    return (
      this.sql
        .exec("UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE endpoint_id = ? AND disabled_at IS NULL RETURNING endpoint_id", at, reason, endpointId)
        .toArray().length > 0
    );
  }

  /** Enables a disabled endpoint with a fresh count of failures; an enabled one is left as it is. */
  enable(endpointId: string): void {
    this.sql.exec(
      "UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, consecutive_failures = 0, failing_since = NULL WHERE endpoint_id = ? AND disabled_at IS NOT NULL",
      endpointId,
    );
  }

  delete(endpointId: string): void {
    this.sql.exec("DELETE FROM webhook_endpoints WHERE endpoint_id = ?", endpointId);
  }

  private rows(): EndpointRow[] {
    return this.sql.exec<EndpointRow>(`SELECT ${COLUMNS} FROM webhook_endpoints ORDER BY created_at, endpoint_id`).toArray();
  }
}

export function parseEvents(stored: string): WebhookEventType[] {
  const parsed: unknown = JSON.parse(stored);
  return Array.isArray(parsed) ? parsed.filter((event) => v.is(WebhookEventTypeSchema, event)) : [];
}

/**
 * Where a URL sends to, as the limits compare it: the URL as `new URL()` normalizes it without its
 * fragment (never sent), and its host in one spelling per destination (schema/egress-policy.ts
 * destinationHost: `example.com.` is `example.com`, `[::ffff:8.8.8.8]` is `8.8.8.8`).
 * A registered URL always parses (the route checked it); one that did not would compare as itself.
 */
function destinationOf(url: string): { url: string; host: string } {
  try {
    const parsed = new URL(url);
    parsed.hash = "";
    // One spelling per destination, as the egress policy judges it: `[::ffff:8.8.8.8]` is 8.8.8.8.
    const host = destinationHost(parsed.hostname);
    parsed.hostname = host;
    return { url: parsed.href, host };
  } catch {
    return { url, host: url };
  }
}

function endpointView(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.endpoint_id,
    url: row.url,
    events: parseEvents(row.events),
    createdAt: row.created_at,
    status: row.disabled_at === null ? "enabled" : "disabled",
    ...(row.disabled_at !== null && { disabledReason: row.disabled_reason ?? "disabled", disabledAt: row.disabled_at }),
  };
}
