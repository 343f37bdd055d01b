import type { RpcResult } from "../../../schema/errors.ts";
import type { CreatedWebhook, PatchWebhook, WebhookDelivery, WebhookEndpoint, WebhookEventType } from "../../../schema/webhooks.ts";
import type { Wire } from "../../../schema/wire.ts";
import { asResult } from "../../rpc/rpc-errors.ts";
import type { Page } from "../time-cursor.ts";
import { randomToken, type TenantHost } from "../tenant-host.ts";
import { newWebhookSecret, sealWebhookSecret } from "./webhook-delivery.ts";

/**
 * The endpoints a tenant registers to be told about its sessions' operations, and their delivery
 * log (tenant-webhooks.ts, webhook-delivery.ts).
 */
export class WebhookSubscriptions {
  constructor(private readonly host: TenantHost) {}

  /** Registers an endpoint; its signing secret is answered this once and stored only sealed. */
  async createWebhook(url: string, events: WebhookEventType[]): Promise<Wire<RpcResult<CreatedWebhook>>> {
    return asResult(async () => {
      const tenant = this.host.requireActiveTenant();
      const id = `wh_${randomToken(12)}`;
      const secret = newWebhookSecret();
      const sealed = await sealWebhookSecret(this.host.env.SECRETS_KEY, tenant.id, id, secret);
      // The seal is awaited before the SQL turn: the tenant and the limits are read in the writing turn.
      this.host.requireActiveTenant();
      this.host.assertStorageRoom();
      return { ...this.host.webhooks().insert({ id, url, events, sealedSecret: sealed, createdAt: Date.now() }), secret };
    });
  }

  async listWebhooks(): Promise<Wire<RpcResult<{ items: WebhookEndpoint[] }>>> {
    return asResult(() => {
      this.host.requireTenant();
      return { items: this.host.webhooks().list() };
    });
  }

  /** Changes an endpoint's subscriptions, or enables or disables it (tenant-webhooks.ts `patch`). */
  async patchWebhook(endpointId: string, patch: PatchWebhook): Promise<Wire<RpcResult<WebhookEndpoint>>> {
    return asResult(() => {
      this.host.requireActiveTenant();
      return this.host.webhooks().patch(endpointId, patch, Date.now());
    });
  }

  async deleteWebhook(endpointId: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(() => {
      this.host.requireTenant();
      this.host.webhooks().delete(endpointId);
      return { deleted: true as const };
    });
  }

  async webhookDeliveries(endpointId: string, limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<WebhookDelivery>>>> {
    return asResult(() => {
      this.host.requireTenant();
      return this.host.webhooks().deliveries(endpointId, limit, cursor);
    });
  }
}
