import type { CreatedWebhook, CreateWebhook, PatchWebhook, WebhookDelivery, WebhookEndpoint, WebhookEvent, WebhookEventType } from "../schema/webhooks.ts";
import { path, type CallOptions, type HttpClient } from "./http.ts";
import { paginate } from "./paging.ts";
import type { Page, PageQuery } from "./types.ts";

export type { CreatedWebhook, CreateWebhook, PatchWebhook, WebhookDelivery, WebhookEndpoint, WebhookEvent, WebhookEventType };

/**
 * The tenant's webhook endpoints (`docs/webhooks.md`): signed POSTs when operations settle. An
 * endpoint's signing secret comes back once, from `create`; it is never shown again.
 */
export class WebhooksApi {
  private readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  /** `POST /v1/webhooks` `{ url, events }` → the endpoint and its `secret` (keep it: it verifies every delivery). */
  create(body: CreateWebhook, options: CallOptions = {}): Promise<CreatedWebhook> {
    return this.http.json({ ...options, method: "POST", path: "/v1/webhooks", body });
  }

  /** `GET /v1/webhooks` → every endpoint, oldest first (no secrets), each with its `status` (`disabledReason` when disabled). */
  async list(options: CallOptions = {}): Promise<WebhookEndpoint[]> {
    const body = await this.http.json<{ items: WebhookEndpoint[] }>({ ...options, method: "GET", path: "/v1/webhooks" });
    return body.items;
  }

  /**
   * `PATCH /v1/webhooks/{id}` `{ enabled?, events? }` → the endpoint. `enabled: true` re-enables an
   * endpoint the service disabled after continuous failures; `events` replaces its subscriptions.
   */
  patch(id: string, body: PatchWebhook, options: CallOptions = {}): Promise<WebhookEndpoint> {
    return this.http.json({ ...options, method: "PATCH", path: `/v1/webhooks${path(id)}`, body });
  }

  /** `DELETE /v1/webhooks/{id}` → 204; its pending deliveries are dropped. 404 NotFound for an unknown id. */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    await this.http.send({ ...options, method: "DELETE", path: `/v1/webhooks${path(id)}` });
  }

  /** `GET /v1/webhooks/{id}/deliveries?limit&cursor` → one page of the endpoint's delivery log. */
  deliveries(id: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<WebhookDelivery>> {
    return this.http.json({ ...options, method: "GET", path: `/v1/webhooks${path(id)}/deliveries`, query: { limit: query.limit, cursor: query.cursor } });
  }

  /** Every delivery of the endpoint's log, fetching pages lazily. */
  allDeliveries(id: string, query: Omit<PageQuery, "cursor"> = {}, options: CallOptions = {}): AsyncGenerator<WebhookDelivery, void, undefined> {
    return paginate((cursor) => this.deliveries(id, { ...query, ...(cursor !== undefined && { cursor }) }, options));
  }
}
