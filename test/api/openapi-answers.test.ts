import * as v from "valibot";
import { beforeAll, describe, expect, inject, it } from "vitest";
import "../provided-context.ts";
import { CreatedKeySchema, pageSchema, TenantQuotasSchema, TenantSummarySchema, KeyInfoSchema, SessionSummarySchema } from "../../schema/api.ts";
import { BrowserTokenSchema } from "../../schema/browser-tokens.ts";
import { DeleteSessionsAnswerSchema, TenantDetailSchema } from "../../schema/data-lifecycle.ts";
import { UiMessagesSchema } from "../../schema/ai-sdk.ts";
import { AgentSchema } from "../../schema/agents.ts";
import { EntrySchema } from "../../schema/entries.ts";
import {
  AbortOutcomeSchema,
  AbortRequestResultSchema,
  CancelQueuedAnswerSchema,
  CompactAnswerSchema,
  EntryPlacementSchema,
  LaneSnapshotAnswerSchema,
  NavigateAnswerSchema,
  AcceptedOperationSchema,
  OperationViewSchema,
  PendingOperationSchema,
  QueuedSchema,
  ToolResultAcceptedSchema,
} from "../../schema/lane-answers.ts";
import { LaneConfigurationSchema, LaneExecutionInfoSchema, LaneInfoSchema } from "../../schema/lane.ts";
import { McpServerListSchema, McpServerViewSchema, ToolListingSchema } from "../../schema/mcp.ts";
import { DefaultModelSchema, ModelInfoSchema, ProviderKeyInfoSchema } from "../../schema/providers.ts";
import { BranchSchema, CreatedSessionSchema, EntryLabelSchema, ResourceNamedSchema, SessionSchema } from "../../schema/session.ts";
import { CreatedToolDefinitionSchema, ToolDefinitionViewSchema } from "../../schema/tools.ts";
import { PutTenantToolReplySchema, TenantMcpServerViewSchema, TenantToolViewSchema } from "../../schema/tenant-tools.ts";
import { CreatedWebhookSchema, WebhookDeliverySchema, WebhookEndpointSchema } from "../../schema/webhooks.ts";
import { ListedScheduleSchema, ScheduleRunSchema, ScheduleSchema } from "../../schema/schedules.ts";
import { CreatedImportSchema, ImportPartAnswerSchema } from "../../schema/data-export.ts";
import { CATALOG } from "../../worker/openapi/catalog.ts";
import type { OpenApiDocument } from "../../worker/openapi/document.ts";
import { BranchPageSchema, EntryPageSchema, HealthSchema, ListPageSchema, SeqSchema, StoredValueSchema, UsagePageSchema } from "../../worker/openapi/responses.ts";
import { call } from "./helpers.ts";
import { AnswerChecker, routeOf } from "./openapi-answers.ts";
import { slowStep } from "./lane-helpers.ts";

// Every documented success answer, produced by the live routes and checked against the served
// document (schema/ is the one source of both): a tenant's whole life through the API, each answer
// validated against the JSON Schema of its status, then read with the route's own valibot schema.

let checker: AnswerChecker;
let key = "";
let sid = "";
const lane = () => ({ sid, lane: "main" });
const ARGS = { type: "object", properties: { question: { type: "string" } }, required: ["question"] };
const PROMPT = routeOf("prompt").responses[200]?.schema ?? v.never();
const RESUME_CURRENT = routeOf("resumeCurrent").responses[200]?.schema ?? v.never();
const PENDING_RUNS = routeOf("listPendingRuns").responses[200]?.schema ?? v.never();

beforeAll(async () => {
  checker = new AnswerChecker(await (await call("/openapi.json")).json<OpenApiDocument>());
});

/** Appends scripted steps to the session (`scripted/steps`, read by the model `scripted/script`). */
async function script(...steps: unknown[]): Promise<void> {
  for (const step of steps) await checker.expect("appendList", 201, SeqSchema, { key, path: { sid, namespace: "scripted", key: "steps" }, body: step });
}

async function settled(operationId: string) {
  const view = await checker.expect("getOperation", 200, OperationViewSchema, { key, path: { ...lane(), opId: operationId }, query: { wait: 30 } });
  expect(view.state).toBe("settled");
  return view;
}

describe("every documented success answer validates against the document", () => {
  it("meta, admin and tenant routes", async () => {
    expect(await checker.expect("health", 200, HealthSchema)).toEqual({ status: "ok" });
    await checker.status("openApiDocument", 200);
    await checker.status("docs", 200);
    const tenant = await checker.expect("createTenant", 201, TenantSummarySchema, { body: { name: "OpenAPI answers" } });
    await checker.expect("listTenants", 200, pageSchema(TenantSummarySchema), { query: { limit: 1000 } });
    const tenantId = { tenantId: tenant.id };
    key = (await checker.expect("createKey", 201, CreatedKeySchema, { path: tenantId, body: { name: "main" } })).key;
    const spare = await checker.expect("createKey", 201, CreatedKeySchema, { path: tenantId, body: {} });
    await checker.status("revokeKey", 204, { path: { ...tenantId, keyId: spare.keyId } });
    const keys = await checker.expect("listKeys", 200, pageSchema(KeyInfoSchema), { path: tenantId, query: { limit: 1 } });
    expect(keys.nextCursor).not.toBeNull();
    await checker.expect("getQuotas", 200, TenantQuotasSchema, { path: tenantId });
    await checker.expect("setQuotas", 200, TenantQuotasSchema, { path: tenantId, body: { requestsPerMinute: 100_000 } });
    await checker.expect("getTenant", 200, TenantDetailSchema, { path: tenantId });
    const doomed = await checker.expect("createTenant", 201, TenantSummarySchema, { body: { name: "Deleted by the answers test" } });
    await checker.expect("deleteTenant", 202, TenantDetailSchema, { path: { tenantId: doomed.id } });
    await checker.expect("deleteSessionsByMetadata", 202, DeleteSessionsAnswerSchema, { key, query: { "metadata.user": "nobody" } });

    await checker.status("getMe", 200, { key });
    await checker.expect("listModels", 200, v.array(ModelInfoSchema), { key });
    await checker.expect("putDefaultModel", 200, DefaultModelSchema, { key, body: { provider: "scripted", modelId: "echo" } });
    await checker.status("deleteDefaultModel", 204, { key });
    await checker.expect("putProviderKey", 200, ProviderKeyInfoSchema, { key, path: { provider: "openai" }, body: { apiKey: "sk-tenant-own-1234" } });
    await checker.expect("listProviders", 200, v.array(ProviderKeyInfoSchema), { key });
    await checker.status("deleteProviderKey", 204, { key, path: { provider: "openai" } });
    // Removed before any operation settles, so nothing is delivered to it.
    const hook = await checker.expect("createWebhook", 201, CreatedWebhookSchema, { key, body: { url: `${inject("webhookReceiverUrl")}/openapi-answers`, events: ["operation.settled"] } });
    await checker.expect("listWebhooks", 200, v.object({ items: v.array(WebhookEndpointSchema) }), { key });
    expect(await checker.expect("updateWebhook", 200, WebhookEndpointSchema, { key, path: { id: hook.id }, body: { enabled: false } })).toMatchObject({ status: "disabled" });
    await checker.expect("listWebhookDeliveries", 200, pageSchema(WebhookDeliverySchema), { key, path: { id: hook.id } });
    await checker.status("deleteWebhook", 204, { key, path: { id: hook.id } });
    const agent = await checker.expect("createAgent", 201, AgentSchema, { key, body: { name: "answers", tools: { current_time: { kind: "builtin" } }, activeTools: ["current_time"] } });
    await checker.expect("updateAgent", 200, AgentSchema, { key, path: { id: agent.id }, body: { description: "v2" } });
    await checker.expect("listAgents", 200, pageSchema(AgentSchema), { key });
    await checker.expect("getAgent", 200, AgentSchema, { key, path: { id: agent.id } });
    await checker.expect("listAgentVersions", 200, pageSchema(AgentSchema), { key, path: { id: agent.id }, query: { limit: 1 } });
    await checker.expect("getAgentVersion", 200, AgentSchema, { key, path: { id: agent.id, version: "1" } });
    await checker.status("deleteAgent", 204, { key, path: { id: agent.id } });

    const tenantTool = { kind: "http", description: "Looks up", parameters: ARGS, url: `${inject("toolWebhookUrl")}/openapi-answers` };
    expect(await checker.expect("putTenantTool", 201, PutTenantToolReplySchema, { key, path: { name: "lookup" }, body: tenantTool })).toMatchObject({ secret: expect.any(String) });
    await checker.expect("putTenantTool", 200, PutTenantToolReplySchema, { key, path: { name: "lookup" }, body: { ...tenantTool, description: "Looks up, v2" } });
    await checker.expect("listTenantTools", 200, pageSchema(TenantToolViewSchema), { key });
    await checker.expect("getTenantTool", 200, TenantToolViewSchema, { key, path: { name: "lookup" } });
    await checker.status("deleteTenantTool", 204, { key, path: { name: "lookup" } });
    const tenantMcp = `${inject("mcpServerUrl")}/mcp/openapi-answers-tenant-${Date.now().toString(36)}`;
    await checker.expect("putTenantMcpServer", 201, TenantMcpServerViewSchema, { key, path: { name: "docs" }, body: { url: tenantMcp } });
    await checker.expect("putTenantMcpServer", 200, TenantMcpServerViewSchema, { key, path: { name: "docs" }, body: { url: tenantMcp, headers: { "x-team": "a" } } });
    await checker.expect("refreshTenantMcpServer", 200, TenantMcpServerViewSchema, { key, path: { name: "docs" } });
    await checker.expect("listTenantMcpServers", 200, pageSchema(TenantMcpServerViewSchema), { key });
    await checker.expect("getTenantMcpServer", 200, TenantMcpServerViewSchema, { key, path: { name: "docs" } });
    await checker.status("deleteTenantMcpServer", 204, { key, path: { name: "docs" } });
  });

  it("sessions, their resources, tools and MCP servers", async () => {
    const tools = { lookup: { kind: "http", description: "Looks up", parameters: ARGS, url: `${inject("toolWebhookUrl")}/openapi-answers` } };
    const creation = { key, body: { name: "answers", tools }, headers: { "idempotency-key": "openapi-answers-1" } };
    const created = await checker.expect("createSession", 201, CreatedSessionSchema, creation);
    expect(Object.keys(created.toolSecrets ?? {})).toEqual(["lookup"]);
    sid = created.id;
    const replayed = await checker.send("createSession", creation);
    expect({ status: replayed.status, replayed: replayed.headers.get("idempotency-replayed") }).toEqual({ status: 201, replayed: "true" });
    await checker.expect("listSessions", 200, pageSchema(SessionSummarySchema), { key, query: { order: "desc", limit: 5 } });
    await checker.expect("getSession", 200, SessionSchema, { key, path: { sid } });
    await checker.expect("createBrowserToken", 201, BrowserTokenSchema, { key, path: { sid }, body: { scopes: ["watch"], lanes: ["main"], ttlSeconds: 60 } });
    const compaction = { enabled: true, reserveTokens: 4000, keepRecentTokens: 2 };
    await checker.expect("updateSession", 200, CreatedSessionSchema, { key, path: { sid }, body: { name: "renamed", settings: { compaction } } });
    await checker.expect("putSkill", 200, ResourceNamedSchema, { key, path: { sid, name: "review" }, body: { content: "Review it." } });
    await checker.status("deleteSkill", 204, { key, path: { sid, name: "review" } });
    await checker.expect("putTemplate", 200, ResourceNamedSchema, { key, path: { sid, name: "sum" }, body: { content: "Sum $1." } });
    await checker.status("deleteTemplate", 204, { key, path: { sid, name: "sum" } });

    const ask = { kind: "client", description: "Asks the user", parameters: ARGS };
    const definition = await checker.expect("putTool", 201, CreatedToolDefinitionSchema, { key, path: { sid, name: "ask_user" }, body: ask });
    expect(definition.parameters).toEqual(ARGS);
    await checker.expect("putTool", 200, ToolDefinitionViewSchema, { key, path: { sid, name: "ask_user" }, body: { ...ask, timeoutMs: 60_000 } });
    await checker.expect("putTool", 201, CreatedToolDefinitionSchema, { key, path: { sid, name: "current_time" }, body: { kind: "builtin" } });
    await checker.status("deleteTool", 204, { key, path: { sid, name: "current_time" } });

    const mcp = `${inject("mcpServerUrl")}/mcp/openapi-answers-${Date.now().toString(36)}`;
    const server = await checker.expect("putMcpServer", 201, McpServerViewSchema, { key, path: { sid, name: "docs" }, body: { url: mcp, replay: { search: "safe" } } });
    expect(server.status).toBe("ready");
    await checker.expect("putMcpServer", 200, McpServerViewSchema, { key, path: { sid, name: "docs" }, body: { url: mcp, headers: { "x-team": "a" } } });
    await checker.expect("refreshMcpServer", 200, McpServerViewSchema, { key, path: { sid, name: "docs" } });
    await checker.expect("listMcpServers", 200, McpServerListSchema, { key, path: { sid } });
    const listing = await checker.expect("listTools", 200, ToolListingSchema, { key, path: { sid } });
    expect(listing.items.some((tool) => tool.kind === "mcp")).toBe(true);
    await checker.status("deleteMcpServer", 204, { key, path: { sid, name: "docs" } });
  });

  it("lanes, the queue, prompts and operations", async () => {
    await checker.expect("putLane", 201, LaneInfoSchema, { key, path: lane(), body: {} });
    await checker.expect("putLane", 200, LaneInfoSchema, { key, path: lane() });
    await checker.expect("listLanes", 200, pageSchema(LaneInfoSchema), { key, path: { sid } });
    await checker.expect("configureLane", 200, LaneConfigurationSchema, { key, path: lane(), body: { thinkingLevel: "low" } });
    const answer = await checker.expect("prompt", 200, PROMPT, { key, path: lane(), body: { prompt: "hello there", wait: 30 } });
    expect(answer).toMatchObject({ status: "completed", messages: [{ role: "user" }, { role: "assistant" }] });
    await checker.expect("appendLaneEntry", 201, EntryPlacementSchema, { key, path: lane(), body: { customType: "note", data: { text: "remember" } } });
    const queued = await checker.expect("enqueue", 201, QueuedSchema, { key, path: lane(), body: { kind: "followUp", message: "later" } });
    await checker.expect("getLaneSnapshot", 200, LaneSnapshotAnswerSchema, { key, path: lane() });
    await checker.expect("aiSdkMessages", 200, UiMessagesSchema, { key, path: lane() });
    await checker.status("aiSdkResumeStream", 204, { key, path: { ...lane(), chatId: sid } });
    expect(await checker.expect("cancelQueued", 200, CancelQueuedAnswerSchema, { key, path: { ...lane(), entryId: queued.entryId } })).toEqual({ result: "cancelled" });
    const accepted = await checker.expect("acceptOperation", 202, AcceptedOperationSchema, { key, path: lane(), body: { kind: "prompt", prompt: "again" } });
    await settled(accepted.operationId);
    await checker.expect("resumeOperation", 200, OperationViewSchema, { key, path: { ...lane(), opId: accepted.operationId } });

    // The compaction and navigation conveniences, settled (200) and still going (202).
    const pendingCompaction = await checker.expect("compact", 202, PendingOperationSchema, { key, path: lane(), body: { wait: 0 } });
    await settled(pendingCompaction.operationId);
    await checker.expect("prompt", 200, PROMPT, { key, path: lane(), body: { prompt: "more to compact", wait: 30 } });
    await checker.expect("compact", 200, CompactAnswerSchema, { key, path: lane(), body: {} });
    const tip = await checker.expect("getLane", 200, LaneExecutionInfoSchema, { key, path: lane() });
    const navigated = await checker.expect("navigate", 200, NavigateAnswerSchema, { key, path: lane(), body: { targetId: null } });
    expect(navigated.navigation.tipId).toBeNull();
    const pendingNavigation = await checker.expect("navigate", 202, PendingOperationSchema, { key, path: lane(), body: { targetId: tip.tipId, wait: 0 } });
    await settled(pendingNavigation.operationId);

    // Scripted runs: slow ones to act on while they stream, a deferred one, a client tool call.
    await checker.expect("configureLane", 200, LaneConfigurationSchema, { key, path: lane(), body: { model: { provider: "scripted", modelId: "script" }, activeTools: ["ask_user"] } });
    await script(slowStep());
    const pending = await checker.expect("prompt", 202, PendingOperationSchema, { key, path: lane(), body: { prompt: "slow", wait: 0 } });
    const requested = await checker.expect("abortOperation", 200, AbortRequestResultSchema, { key, path: { ...lane(), opId: pending.operationId } });
    expect(requested.operationId).toBe(pending.operationId);
    await settled(pending.operationId);
    await script(slowStep());
    await checker.expect("acceptOperation", 202, AcceptedOperationSchema, { key, path: lane(), body: { kind: "prompt", prompt: "slow" } });
    // A prompt while busy: a pending run, listed, then cancelled before it starts.
    const waiting = await checker.expect("acceptOperation", 202, AcceptedOperationSchema, { key, path: lane(), body: { kind: "prompt", prompt: "later", ifBusy: "enqueue" } });
    const line = await checker.expect("listPendingRuns", 200, PENDING_RUNS, { key, path: lane() });
    expect(line).toEqual({ items: [expect.objectContaining({ operationId: waiting.operationId, position: 1 })] });
    await checker.expect("abortOperation", 200, AbortRequestResultSchema, { key, path: { ...lane(), opId: waiting.operationId } });
    const aborted = await checker.expect("abortCurrent", 200, AbortOutcomeSchema, { key, path: lane(), query: { wait: 30 } });
    expect(aborted.record?.status).toBe("aborted");
    await script(slowStep());
    const running = await checker.expect("acceptOperation", 202, AcceptedOperationSchema, { key, path: lane(), body: { kind: "prompt", prompt: "slow" } });
    await checker.expect("resumeCurrent", 202, PendingOperationSchema, { key, path: lane(), query: { wait: 0 } });
    expect(await checker.expect("resumeCurrent", 200, RESUME_CURRENT, { key, path: lane(), query: { wait: 30 } })).toMatchObject({ operationId: running.operationId, status: "completed" });
    // A step an aborted run never took would be the next run's: the script starts afresh.
    await checker.status("deleteList", 204, { key, path: { sid, namespace: "scripted", key: "steps" } });
    await script({ deferred: { ready: { text: "ready later" } } });
    const suspended = await checker.expect("prompt", 200, PROMPT, { key, path: lane(), body: { prompt: "take your time", wait: 30 } });
    expect(suspended).toMatchObject({ status: "suspended" });
    const ready = await checker.expect("resumeCurrent", 200, RESUME_CURRENT, { key, path: lane(), query: { wait: 30 } });
    expect(ready).toMatchObject({ status: "completed" });

    await script({ toolCalls: [{ name: "ask_user", arguments: { question: "ok?" } }] }, { text: "thanks" });
    const asking = await checker.expect("acceptOperation", 202, AcceptedOperationSchema, { key, path: lane(), body: { kind: "prompt", prompt: "ask me" } });
    const toolCallId = await waitingClientCall();
    const result = { content: [{ type: "text", text: "yes" }] };
    await checker.expect("postToolResult", 202, ToolResultAcceptedSchema, { key, path: { ...lane(), opId: asking.operationId, toolCallId }, body: result });
    await settled(asking.operationId);
  });

  it("entries, labels, usage, values, lists, branches and forks", async () => {
    const entries = await checker.expect("listEntries", 200, EntryPageSchema, { key, path: { sid }, query: { order: "desc", limit: 1000 } });
    const entryId = entries.items[0]?.id ?? "";
    await checker.expect("getEntry", 200, EntrySchema, { key, path: { sid, entryId } });
    await checker.expect("setEntryLabel", 200, EntryLabelSchema, { key, path: { sid, entryId }, body: { label: "checkpoint" } });
    expect(await checker.expect("getEntryLabel", 200, EntryLabelSchema, { key, path: { sid, entryId } })).toEqual({ entryId, label: "checkpoint" });
    await checker.status("deleteEntryLabel", 204, { key, path: { sid, entryId } });
    await checker.expect("getUsage", 200, UsagePageSchema, { key, path: { sid }, query: { fromSeq: 0, limit: 1000 } });
    const value = { sid, namespace: "app", key: "theme" };
    await checker.expect("putValue", 200, SeqSchema, { key, path: value, body: { dark: true } });
    await checker.expect("getValue", 200, StoredValueSchema, { key, path: value });
    await checker.status("deleteValue", 204, { key, path: value });
    await checker.expect("appendList", 201, SeqSchema, { key, path: value, body: 1 });
    await checker.expect("readList", 200, ListPageSchema, { key, path: value, query: { order: "desc", limit: 10 } });
    await checker.status("deleteList", 204, { key, path: value });
    await checker.expect("createBranch", 201, BranchSchema, { key, path: { sid }, body: { name: "side", at: entryId } });
    await checker.expect("appendBranchEntry", 201, EntryPlacementSchema, { key, path: { sid, name: "side" }, body: { message: { role: "user", content: "aside" } } });
    await checker.expect("scanBranch", 200, EntryPageSchema, { key, path: { sid, name: "side" }, query: { order: "oldestFirst", limit: 5 } });
    await checker.expect("listBranches", 200, BranchPageSchema, { key, path: { sid } });
    const fork = await checker.expect("forkSession", 201, SessionSchema, { key, path: { sid }, body: { scope: "tree" } });
    expect(fork.parentSessionId).toBe(sid);
    await checker.status("deleteSession", 204, { key, path: { sid: fork.id } });
    // Export and import (docs/data.md): the export's lines, imported in one request and in parts.
    const exported = await checker.send("exportSession", { key, path: { sid } });
    expect(exported.status).toBe(200);
    const lines = (exported.body as unknown[]).map((line) => `${JSON.stringify(line)}\n`).join("");
    const imported = await checker.expect("importSession", 201, CreatedSessionSchema, { key, lines });
    const begun = await checker.expect("createImport", 201, CreatedImportSchema, { key, body: {} });
    await checker.expect("putImportPart", 200, ImportPartAnswerSchema, { key, path: { importId: begun.importId, part: "1" }, lines });
    const committed = await checker.expect("commitImport", 201, CreatedSessionSchema, { key, path: { importId: begun.importId } });
    expect([imported.id, committed.id]).toEqual([imported.id, begun.sessionId]);
  });

  // The SSE streams are read by test/api/sse-*.test.ts and test/api/ai-sdk.test.ts, not here.
  it("schedules", async () => {
    const body = { id: "answers", everySeconds: 3600, prompt: "Hourly" };
    const created = await checker.expect("createSchedule", 201, ScheduleSchema, { key, path: lane(), body });
    await checker.expect("createSchedule", 200, ScheduleSchema, { key, path: lane(), body });
    const path = { ...lane(), id: created.id };
    await checker.expect("listLaneSchedules", 200, v.object({ items: v.array(ScheduleSchema) }), { key, path: lane() });
    await checker.expect("getSchedule", 200, ScheduleSchema, { key, path });
    await checker.expect("updateSchedule", 200, ScheduleSchema, { key, path, body: { paused: true } });
    await checker.expect("listScheduleRuns", 200, pageSchema(ScheduleRunSchema), { key, path });
    await checker.expect("listSchedules", 200, pageSchema(ListedScheduleSchema), { key });
    await checker.status("deleteSchedule", 204, { key, path });
  });

  it("saw every documented success answer but the WebSocket upgrades' and the event streams'", () => {
    const documented = CATALOG.flatMap((route) => Object.keys(route.responses).map((status) => `${route.operationId} ${status}`));
    const upgrades = ["watchSession 101", "watchLane 101", "laneEvents 200", "aiSdkChat 200", "aiSdkResumeStream 200"];
    expect(documented.filter((answer) => !checker.seen.has(answer) && !upgrades.includes(answer))).toEqual([]);
  });
});

/** The id of the client tool call the lane's run waits on (bounded polling, no timing asserted). */
async function waitingClientCall(): Promise<string> {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const { snapshot } = await checker.expect("getLaneSnapshot", 200, LaneSnapshotAnswerSchema, { key, path: lane() });
    const row = snapshot.operation?.runningTools.find((tool) => tool.status === "running" && tool.executor === "client");
    if (row) return row.toolCallId;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the client call never showed up in the snapshot");
}
