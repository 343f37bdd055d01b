import type { RpcResult } from "../../schema/errors.ts";
import type { Usage } from "../../schema/usage.ts";
import type { CreatedWebhook, PatchWebhook, WebhookDelivery, WebhookEndpoint, WebhookEventType } from "../../schema/webhooks.ts";
import type { Wire } from "../../schema/wire.ts";
import { zeroUsage } from "../../harness/session/usage.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import type { SettledOperation } from "../session/due-work/settlement-outbox.ts";
import type { ForwardedUsage } from "../session/due-work/usage-outbox.ts";
import { settledEvent, suspendedEvent, type EnqueuedEvent, type SuspendedRun } from "./webhooks/webhook-events.ts";
import type { Page } from "./time-cursor.ts";
import { newWebhookSecret, sealWebhookSecret } from "./webhooks/webhook-delivery.ts";
import { SessionUsageMarks } from "./session-usage-marks.ts";
import { randomToken, TenantHost } from "./tenant-host.ts";

/**
 * What the tenant's sessions report after their commits (settled operations, usage) and what the
 * tenant registers to be told about them (webhook endpoints, their delivery log).
 */
export abstract class TenantActivityRpc extends TenantHost {
  /**
   * A session's settlement outbox forwards its settled operations here (one call per batch, after
   * their commit, repeated after a crash): their open-operation slots are freed (with the worker's
   * reservation the session took over, if any) and one webhook delivery per subscribed endpoint is
   * enqueued. Idempotent: a release is, and an event id is derived from session and operation and
   * remembered longer than a forward may be repeated (webhooks/webhook-event-ids.ts), so a repeated forward
   * enqueues nothing twice. `usage`: the session's usage-ledger rows it has not seen acknowledged,
   * added to the totals in the same transaction, each once (session-usage-marks.ts), so the totals
   * stay exact across failed and repeated forwards.
   */
  async operationsSettled(sessionId: string, operations: SettledOperation[], usage?: ForwardedUsage): Promise<void> {
    if (!this.schema.exists) return;
    const events = (await Promise.all(operations.map((operation) => settledEvent(sessionId, operation)))).filter(
      (event): event is EnqueuedEvent => event !== undefined,
    );
    // All or nothing: a batch that fails to apply leaves the slots held and the session retries it.
    const now = Date.now();
    const enqueued = this.ctx.storage.transactionSync(() => {
      const ledger = this.operations();
      for (const operation of operations) ledger.releaseSettled(operation.operationId, operation.reservationId, now);
      if (usage) for (const row of new SessionUsageMarks(this.ctx.storage.sql).unapplied(sessionId, usage)) ledger.addUsage(row);
      return this.webhooks().enqueue(this.eventIds().claim(events, now), now);
    });
    // Memory follows the committed transaction: a batch that failed keeps its slots held.
    this.operations().forgetPending(operations.map((operation) => operation.reservationId));
    if (enqueued > 0) await this.armNoLaterThan(now);
  }

  /**
   * A session's suspended runs, forwarded after the suspending commit with their DeferredIndex
   * registration (repeated after a crash): one `operation.suspended` delivery per subscribed
   * endpoint, idempotent by event id (webhooks/webhook-event-ids.ts).
   */
  async operationsSuspended(sessionId: string, runs: SuspendedRun[]): Promise<void> {
    if (!this.schema.exists) return;
    const now = Date.now();
    const events = await Promise.all(runs.map((run) => suspendedEvent(sessionId, run, now)));
    const enqueued = this.ctx.storage.transactionSync(() => this.webhooks().enqueue(this.eventIds().claim(events, now), now));
    if (enqueued > 0) await this.armNoLaterThan(now);
  }

  /** Slots of the open-operations quota taken now: bound operations and accepts in flight. */
  async openOperationCount(): Promise<number> {
    return this.schema.exists ? this.operations().count() : 0;
  }

  /** Frees a slot by operation id (the operation settled) or reservation id (the accept failed). */
  async releaseOperation(id: string): Promise<void> {
    if (this.schema.exists) this.operations().release(id, Date.now());
  }

  async usageTotals(): Promise<Usage> {
    return this.schema.exists ? this.operations().usage() : zeroUsage();
  }

  // Webhooks (webhooks/tenant-webhooks.ts, webhooks/webhook-delivery.ts).

  /** Registers an endpoint; its signing secret is answered this once and stored only sealed. */
  async createWebhook(url: string, events: WebhookEventType[]): Promise<Wire<RpcResult<CreatedWebhook>>> {
    return asResult(async () => {
      const tenant = this.requireTenant();
      const id = `wh_${randomToken(12)}`;
      const secret = newWebhookSecret();
      const sealed = await sealWebhookSecret(this.env.SECRETS_KEY, tenant.id, id, secret);
      // The seal is awaited before the SQL turn: the tenant and the limits are read in the writing turn.
      this.requireTenant();
      return { ...this.webhooks().insert({ id, url, events, sealedSecret: sealed, createdAt: Date.now() }), secret };
    });
  }

  async listWebhooks(): Promise<Wire<RpcResult<{ items: WebhookEndpoint[] }>>> {
    return asResult(() => {
      this.requireTenant();
      return { items: this.webhooks().list() };
    });
  }

  /** Changes an endpoint's subscriptions, or enables or disables it (webhooks/tenant-webhooks.ts `patch`). */
  async patchWebhook(endpointId: string, patch: PatchWebhook): Promise<Wire<RpcResult<WebhookEndpoint>>> {
    return asResult(() => {
      this.requireTenant();
      return this.webhooks().patch(endpointId, patch, Date.now());
    });
  }

  async deleteWebhook(endpointId: string): Promise<Wire<RpcResult<{ deleted: true }>>> {
    return asResult(() => {
      this.requireTenant();
      this.webhooks().delete(endpointId);
      return { deleted: true as const };
    });
  }

  async webhookDeliveries(endpointId: string, limit: number, cursor: string | undefined): Promise<Wire<RpcResult<Page<WebhookDelivery>>>> {
    return asResult(() => {
      this.requireTenant();
      return this.webhooks().deliveries(endpointId, limit, cursor);
    });
  }
}
