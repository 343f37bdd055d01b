import { DurableObject } from "cloudflare:workers";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { AgentDefinition } from "../../schema/agents.ts";
import type { McpServerInput } from "../../schema/mcp.ts";
import type { TenantToolInput } from "../../schema/tenant-tools.ts";
import type { TenantQuotas } from "../../schema/api.ts";
import type { ModelIdentity } from "../../schema/lane.ts";
import type { Wire } from "../../schema/wire.ts";
import type { PatchWebhook, WebhookEventType } from "../../schema/webhooks.ts";
import type { ScheduleSkipReason } from "../../schema/schedules.ts";
import { TenantSchedules, type ScheduleDue } from "./tenant-schedules.ts";
import type { IdempotencyReplay } from "../rpc/idempotency.ts";
import type { SettledOperation } from "../session/due-work/settlement-outbox.ts";
import type { ForwardedUsage } from "../session/due-work/usage-outbox.ts";
import type { SuspendedRun } from "./webhooks/webhook-events.ts";
import { WebhookSubscriptions } from "./webhooks/webhook-subscriptions.ts";
import { AdminDirectory } from "./admin-directory.ts";
import { DataLifecycle } from "./data-lifecycle.ts";
import { Agents } from "./agents.ts";
import { TenantMcpServers } from "./tenant-mcp-servers.ts";
import { TenantTools } from "./tenant-tools.ts";
import { IdempotencyKeys } from "./idempotency-keys.ts";
import { OperationsAndUsage } from "./operations-and-usage.ts";
import { ProviderSettings, type TenantProviderSettings } from "./provider-settings.ts";
import { SessionListing } from "./session-listing.ts";
import { TenantAuth, type Authorization } from "./tenant-auth.ts";
import { DEFAULT_REQUESTS_PER_MINUTE, TenantHost, type TenantInfo } from "./tenant-host.ts";
import { sha256Hex, type KeyInfo } from "./tenant-keys.ts";
import type { SessionSummary, TenantSummary } from "./tenant-listings.ts";
import type { SessionMetadata } from "../../schema/session-metadata.ts";
import type { SessionSearch } from "../../schema/session-search.ts";
import { TenantRecord } from "./tenant-record.ts";
import type { Page } from "./time-cursor.ts";

export type { Authorization, KeyInfo, Page, SessionSummary, TenantInfo, TenantProviderSettings, TenantSummary };
export { DEFAULT_REQUESTS_PER_MINUTE, sha256Hex };

/**
 * One per tenant (ARCHITECTURE D2, D17): the tenant record, SHA-256 hashes of its API keys
 * (tenant-keys.ts), the index of its sessions for listing (tenant-listings.ts),
 * its quotas (requests per minute, leased to the front worker: request-window.ts; open operations:
 * tenant-operations.ts) and its usage totals.
 * Keys are minted here and shown once; only their hashes are stored. This class is the object's
 * whole RPC surface: each method delegates to a capability (tenant-record.ts, tenant-auth.ts,
 * provider-settings.ts, operations-and-usage.ts, webhooks/webhook-subscriptions.ts, agents.ts,
 * session-listing.ts, admin-directory.ts, idempotency-keys.ts), which receives in its constructor
 * what it may touch; the host (tenant-host.ts) holds what they share: the schema, the stores, the
 * state in memory and the one alarm.
 *
 * Storage exists only once the admin created the tenant (sql/lazy-schema.ts): anyone can name a
 * tenant object with a garbage key `sk_<anyTenant>_…`, and such a request must write nothing.
 * Every method but `createTenant` and the idempotency claim (admin or authenticated traffic only)
 * answers "no such tenant" without writing when the schema is absent.
 *
 * Two objects of this class are not tenants (their names contain ':', which no tenant id can):
 * "admin:idempotency" remembers the admin's Idempotency-Keys, and "admin:directory" lists the
 * tenants for the admin. The directory reuses this class (its table is one more of this class's
 * append-only migrations) rather than a class of its own, which would need a new class migration
 * in wrangler.toml for one small table; it is touched only by admin calls, never per request.
 */
export class TenantObject extends DurableObject<Env> {
  private readonly host = new TenantHost(this.ctx, this.env);
  private readonly record = new TenantRecord(this.host);
  private readonly auth = new TenantAuth(this.host);
  private readonly providers = new ProviderSettings(this.host);
  private readonly operations = new OperationsAndUsage(this.host);
  private readonly webhooks = new WebhookSubscriptions(this.host);
  private readonly agents = new Agents(this.host);
  private readonly tenantTools = new TenantTools(this.host);
  private readonly tenantMcpServers = new TenantMcpServers(this.host);
  private readonly sessions = new SessionListing(this.host);
  private readonly directory = new AdminDirectory(this.host.schema, this.host.sql);
  private readonly idempotency = new IdempotencyKeys(this.host.schema, this.host.sql);
  private readonly schedules = new TenantSchedules(this.host);
  private readonly lifecycle = new DataLifecycle(this.host);

  // The tenant record and its quotas (tenant-record.ts).
  async createTenant(id: string, name: string) { return this.record.createTenant(id, name); }
  async info() { return this.record.info(); }
  async getQuotas() { return this.record.getQuotas(); }
  async setQuotas(quotas: Partial<TenantQuotas>) { return this.record.setQuotas(quotas); }

  // API keys and request authorization (tenant-auth.ts).
  async createKey(name: string, derivedKeyId?: string) { return this.auth.createKey(name, derivedKeyId); }
  async revokeKey(keyId: string) { return this.auth.revokeKey(keyId); }
  async listKeys(limit: number, cursor: string | undefined) { return this.auth.listKeys(limit, cursor); }
  async registerWatch(keyId: string, sessionId: string) { return this.auth.registerWatch(keyId, sessionId); }
  async verifyKey(hash: string) { return this.auth.verifyKey(hash); }
  async authorizeLease(hash: string, wanted: number, now?: number) { return this.auth.authorizeLease(hash, wanted, now); }
  async authorizeAndReserve(hash: string, sessionId: string, lane: string, wanted: number, now?: number) { return this.auth.authorizeAndReserve(hash, sessionId, lane, wanted, now); }

  // Provider keys and the default model (provider-settings.ts).
  async putProviderKey(provider: string, apiKey: string, baseUrl: string | undefined) { return this.providers.putProviderKey(provider, apiKey, baseUrl); }
  async deleteProviderKey(provider: string) { return this.providers.deleteProviderKey(provider); }
  async providerSettings() { return this.providers.providerSettings(); }
  async setDefaultModel(model: ModelIdentity | null) { return this.providers.setDefaultModel(model); }
  async providerGrant(provider: string) { return this.providers.providerGrant(provider); }

  // Scheduled runs: their quota and webhook events, one call per due time; the count of schedules (tenant-schedules.ts).
  async reserveScheduledRun(sessionId: string, due: ScheduleDue, now?: number) { return this.schedules.reserveScheduledRun(sessionId, due, now); }
  async scheduleSkipped(sessionId: string, due: ScheduleDue, reason: ScheduleSkipReason, detail: string | undefined, reserved: boolean) { return this.schedules.scheduleSkipped(sessionId, due, reason, detail, reserved); }
  async claimSchedule(sessionId: string, scheduleId: string, now?: number) { return this.schedules.claimSchedule(sessionId, scheduleId, now); }
  async releaseScheduleClaim(sessionId: string, scheduleId: string) { return this.schedules.releaseScheduleClaim(sessionId, scheduleId); }
  async schedulesRegistered(sessionId: string, scheduleIds: string[], removedIds: string[]) { return this.schedules.schedulesRegistered(sessionId, scheduleIds, removedIds); }

  // Open operations, usage, and the sessions' reports after their commits (operations-and-usage.ts).
  async reserveOperation(sessionId: string, lane: string, now?: number) { return this.operations.reserveOperation(sessionId, lane, now); }
  async bindOperation(reservationId: string, operationId: string, owner?: { sessionId: string; lane: string }) { return this.operations.bindOperation(reservationId, operationId, owner); }
  async releaseReservation(reservationId: string) { return this.operations.releaseReservation(reservationId); }
  async releaseOperation(sessionId: string, operationId: string) { return this.operations.releaseOperation(sessionId, operationId); }
  async openOperationCount() { return this.operations.openOperationCount(); }
  async usageTotals() { return this.operations.usageTotals(); }
  async operationsSettled(sessionId: string, operations: SettledOperation[], usage?: ForwardedUsage, slotsFor?: readonly string[]) { return this.operations.operationsSettled(sessionId, operations, usage, slotsFor); }
  async operationsSuspended(sessionId: string, runs: SuspendedRun[]) { return this.operations.operationsSuspended(sessionId, runs); }

  // Webhook endpoints and their deliveries (webhooks/webhook-subscriptions.ts).
  async createWebhook(url: string, events: WebhookEventType[]) { return this.webhooks.createWebhook(url, events); }
  async listWebhooks() { return this.webhooks.listWebhooks(); }
  async patchWebhook(endpointId: string, patch: PatchWebhook) { return this.webhooks.patchWebhook(endpointId, patch); }
  async deleteWebhook(endpointId: string) { return this.webhooks.deleteWebhook(endpointId); }
  async webhookDeliveries(endpointId: string, limit: number, cursor: string | undefined) { return this.webhooks.webhookDeliveries(endpointId, limit, cursor); }

  // Agents and their versions (agents.ts).
  async createAgent(agentId: string, definition: Wire<AgentDefinition>) { return this.agents.createAgent(agentId, definition); }
  async listAgents(limit: number, cursor: string | undefined) { return this.agents.listAgents(limit, cursor); }
  async getAgent(agentId: string) { return this.agents.getAgent(agentId); }
  async listAgentVersions(agentId: string, limit: number, cursor: string | undefined) { return this.agents.listAgentVersions(agentId, limit, cursor); }
  async getAgentVersion(agentId: string, version: number) { return this.agents.getAgentVersion(agentId, version); }
  async appendAgentVersion(agentId: string, basedOn: number, definition: Wire<AgentDefinition>) { return this.agents.appendAgentVersion(agentId, basedOn, definition); }
  async deleteAgent(agentId: string) { return this.agents.deleteAgent(agentId); }
  async agentForSession(agentId: string, version: number | undefined, sessionId: string) { return this.agents.agentForSession(agentId, version, sessionId); }

  // Tenant tools and MCP servers, by revision (tenant-tools.ts, tenant-mcp-servers.ts).
  async listTenantTools(limit: number, cursor: string | undefined) { return this.tenantTools.listTenantTools(limit, cursor); }
  async getTenantTool(name: string) { return this.tenantTools.getTenantTool(name); }
  async putTenantTool(name: string, input: Wire<TenantToolInput>) { return this.tenantTools.putTenantTool(name, input); }
  async deleteTenantTool(name: string) { return this.tenantTools.deleteTenantTool(name); }
  async listTenantMcpServers(limit: number, cursor: string | undefined) { return this.tenantMcpServers.listTenantMcpServers(limit, cursor); }
  async getTenantMcpServer(name: string) { return this.tenantMcpServers.getTenantMcpServer(name); }
  async putTenantMcpServer(name: string, input: Wire<McpServerInput>) { return this.tenantMcpServers.putTenantMcpServer(name, input); }
  async deleteTenantMcpServer(name: string) { return this.tenantMcpServers.deleteTenantMcpServer(name); }
  async refreshTenantMcpServer(name: string) { return this.tenantMcpServers.refreshTenantMcpServer(name); }

  // The session index and its search (session-listing.ts, session-search.ts).
  async registerSession(summary: SessionSummary) { return this.sessions.registerSession(summary); }
  async renameSession(sessionId: string, name: string | null, seq: number) { return this.sessions.renameSession(sessionId, name, seq); }
  async sessionChanged(sessionId: string) { return this.sessions.sessionChanged(sessionId); }
  async unregisterSession(sessionId: string, createdAt?: number) { return this.sessions.unregisterSession(sessionId, createdAt); }
  async setSessionMetadata(sessionId: string, metadata: SessionMetadata, seq: number) { return this.sessions.setSessionMetadata(sessionId, metadata, seq); }
  async setSessionAgent(sessionId: string, agent: AgentVersionRef, seq: number) { return this.sessions.setSessionAgent(sessionId, agent, seq); }
  async searchSessions(search: SessionSearch) { return this.sessions.searchSessions(search); }

  // The admin's directory of tenants, on "admin:directory" only (admin-directory.ts).
  async registerTenant(tenant: TenantSummary, retentionDays?: number | null) { return this.directory.registerTenant(tenant, retentionDays); }
  async listTenants(limit: number, cursor: string | undefined) { return this.directory.listTenants(limit, cursor); }

  // Deletion and retention (data-lifecycle.ts; the directory's part: admin-directory.ts).
  async deleteSessionsByMetadata(pairs: [string, string][]) { return this.lifecycle.deleteSessionsByMetadata(pairs); }
  async deleteTenant() { return this.lifecycle.deleteTenant(); }
  async tenantDetail() { return this.lifecycle.tenantDetail(); }
  async sweepRetention(now: number) { return this.lifecycle.sweepRetention(now); }
  async directoryStatus(tenantId: string) { return this.directory.directoryStatus(tenantId); }
  async markTenant(tenantId: string, status: "deleting" | "deleted") { return this.directory.markTenant(tenantId, status); }
  async takeTenantsDueForRetention(now: number, limit: number) { return this.directory.takeTenantsDueForRetention(now, limit); }

  // Idempotency-Keys of the creating POSTs this object owns (idempotency-keys.ts).
  async idempotencyClaim(key: string, requestHash: string) { return this.idempotency.idempotencyClaim(key, requestHash); }
  async idempotencyComplete(key: string, requestHash: string, replay: IdempotencyReplay | null) { return this.idempotency.idempotencyComplete(key, requestHash, replay); }

  // The one alarm, shared by watch revocations, webhook deliveries and deletions (tenant-host.ts).
  override async alarm() { return this.host.alarm(this.lifecycle); }
}
