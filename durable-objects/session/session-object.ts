import { DurableObject } from "cloudflare:workers";
import type { HandedReservation } from "./due-work/settlement-outbox.ts";
import type { CompactionRequest, NavigationRequest, OperationRequest, RunRequest } from "../../harness/runtime/acceptance.ts";
import type { BranchScan } from "../../harness/session/branch.ts";
import type { EntryQuery } from "../../harness/session/session.ts";
import type { ListReadOptions, UsageScan } from "../../harness/session/storage.ts";
import type { ForkOptions } from "../../schema/api-fork.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { McpServerInput } from "../../schema/mcp.ts";
import type { PromptTemplate, Skill } from "../../schema/settings.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import type { SessionMetadataPatch } from "../../schema/session-metadata.ts";
import type { ClientToolResult, ToolDefinitionInput } from "../../schema/tools.ts";
import { toWire, type Wire } from "../../schema/wire.ts";
import type { RpcResult } from "../../schema/errors.ts";
import { growing } from "./storage-budget.ts";
import type { IdempotencyReplay, ReceiptScope } from "../rpc/idempotency.ts";
import { CreationSlots } from "./creation-slots.ts";
import type { AgentForSession } from "../../tools/tenant-copies.ts";
import { SessionAgent } from "./session-agent.ts";
import { SessionBranches, type NamePageQuery } from "./session-branches.ts";
import { SessionData } from "./session-data.ts";
import { SessionExport } from "./session-export.ts";
import { SessionFork, type ForkInit } from "./session-fork.ts";
import { SessionImport, type ImportInit } from "./session-import.ts";
import { SessionHost, type LaneConfigPatch, type NewBranchEntry, type QueueInput, type SessionInit } from "./session-host.ts";
import { SessionLanes } from "./session-lanes.ts";
import { SessionLifecycle } from "./session-lifecycle.ts";
import { SessionMcp } from "./session-mcp.ts";
import { SessionOperations, type BusyStrategy } from "./session-operations.ts";
import { SessionSchedules } from "./session-schedules.ts";
import { SessionSettings } from "./session-settings.ts";
import type { CreateSchedule, PatchSchedule } from "../../schema/schedules.ts";
import { SessionStructural } from "./session-structural.ts";
import { SessionTools } from "./session-tools.ts";
import { SessionWatch } from "./session-watch.ts";
import type { ForkDataCursor, ForkEntryCursor, ForkPlan } from "./storage/fork-source.ts";
import type { ExportCursor } from "./storage/export-pages.ts";
import type { ListPageOptions } from "./storage/json-pages.ts";

export type { BranchInfo, LaneConfigPatch, NewBranchEntry, QueueInput, SessionInfo, SessionInit } from "./session-host.ts";

/** A deletion's body on the wire (`DELETE …/skills/{name}`), told apart without parsing a body. */
const WIRE_NULL: string = toWire(null);

/**
 * One session per object, named `${tenantId}:${sessionId}` (ARCHITECTURE D2). The object owns
 * nothing but its parts: the host (storage, the opened session and runtime, due work, outboxes:
 * session-host.ts) and plain capability modules, each given what it uses. Below is the object's
 * whole contract with the front worker, one line per method. Expected failures come back as
 * tagged values (`RpcResult`), never as throws.
 */
export class SessionObject extends DurableObject<Env> {
  private readonly host: SessionHost;
  private readonly lifecycle: SessionLifecycle;
  private readonly branchesAndEntries: SessionBranches;
  private readonly data: SessionData;
  private readonly fork: SessionFork;
  private readonly exporter: SessionExport;
  private readonly imports: SessionImport;
  private readonly laneCommands: SessionLanes;
  private readonly operations: SessionOperations;
  private readonly structural: SessionStructural;
  private readonly sessionSettings: SessionSettings;
  private readonly agent: SessionAgent;
  private readonly tools: SessionTools;
  private readonly mcp: SessionMcp;
  private readonly watch: SessionWatch;
  private readonly schedules: SessionSchedules;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Cheap: no storage is read here beyond the schema check the host makes (D2).
    this.host = new SessionHost(ctx, env, {
      harnessCreated: (harness) => {
        this.watch.harnessCreated(harness);
        this.structural.harnessCreated();
      },
      liveUpdateIntervalMs: (lane) => this.liveUpdateIntervalMs(lane),
      mcpServerStale: (name) => this.mcp.refreshInBackground(name),
      schedulesDue: () => this.schedules.alarm(),
    });
    const slots = new CreationSlots(ctx.storage);
    this.lifecycle = new SessionLifecycle(this.host);
    this.branchesAndEntries = new SessionBranches(this.host, slots);
    this.data = new SessionData(this.host);
    this.fork = new SessionFork(this.host, this.lifecycle);
    this.exporter = new SessionExport(this.host);
    this.imports = new SessionImport(this.host, this.lifecycle);
    this.laneCommands = new SessionLanes(this.host, slots);
    this.operations = new SessionOperations(this.host);
    this.structural = new SessionStructural(this.host, this.operations);
    this.sessionSettings = new SessionSettings(this.host);
    this.agent = new SessionAgent(this.host);
    this.tools = new SessionTools(this.host);
    this.mcp = new SessionMcp(this.host);
    this.schedules = new SessionSchedules(this.host, {
      acceptOperation: (lane, request) => this.grows(() => this.operations.acceptOperation(lane, request)),
      // A schedule's interrupt has no caller to hand the interrupted run's queued input back to: it stays queued.
      acceptWhileBusy: (lane, request, ifBusy) => this.grows(() => this.operations.acceptWhileBusy(lane, request, ifBusy, undefined, { keepQueuedInput: true })),
    });
    this.watch = new SessionWatch(this.host, {
      acceptOperation: (lane, request, receipt) => this.grows(() => this.operations.acceptOperation(lane, request, receipt)),
      acceptOperationOnHeldSlot: (lane, request, receipt) => this.grows(() => this.operations.acceptOperationOnHeldSlot(lane, request, receipt)),
      acceptWhileBusy: (lane, request, ifBusy, receipt) => this.grows(() => this.operations.acceptWhileBusy(lane, request, ifBusy, receipt)),
      handToRunningRun: (lane, request, ifBusy, receipt) => this.grows(() => this.operations.handToRunningRun(lane, request, ifBusy, receipt)),
      enqueue: (lane, kind, input, receipt) => this.grows(() => this.laneCommands.enqueue(lane, kind, input, receipt)),
      abortCurrent: (lane, waitMs, receipt) => this.operations.abortCurrent(lane, waitMs, receipt),
    });
  }

  /**
   * A client's write that grows the session (an entry, a value, a list item, a run, a queued
   * input, a lane, a branch, a label, a tool, a resource): refused while the object is past its
   * storage budget (storage-budget.ts), so a full session answers 422 instead of faulting.
   */
  private grows<T>(work: () => Promise<Wire<RpcResult<T>>>): Promise<Wire<RpcResult<T>>>;
  private grows<T>(work: () => Promise<Wire<RpcResult<T>> | null>): Promise<Wire<RpcResult<T>> | null>;
  private grows<T>(work: () => Promise<Wire<RpcResult<T>> | null>): Promise<Wire<RpcResult<T>> | null> {
    return growing(this.ctx.storage.sql, work);
  }

  // Hosting: the alarm drives due work; the idempotency store of the session's creating POSTs.
  override async alarm() { if (!(await this.imports.alarm())) await this.host.alarm(); }
  idempotencyClaim(key: string, requestHash: string) { return this.host.idempotencyClaim(key, requestHash); }
  idempotencyComplete(key: string, requestHash: string, replay: IdempotencyReplay | null) { return this.host.idempotencyComplete(key, requestHash, replay); }

  // Lifecycle (session-lifecycle.ts).
  create(init: SessionInit) { return this.lifecycle.create(init); }
  info() { return this.lifecycle.info(); }
  createdAt() { return this.lifecycle.createdAt(); }
  view() { return this.lifecycle.view(); }
  deleteSession(expectedCreatedAt?: number, onlyIfIdle?: boolean) { return this.lifecycle.deleteSession(expectedCreatedAt, onlyIfIdle); }

  // Fork (session-fork.ts): the destination pulls pages from the source.
  createFork(init: ForkInit) { return this.fork.createFork(init); }
  forkPlan(options: Wire<ForkOptions>) { return this.fork.forkPlan(options); }
  forkEntries(plan: Wire<Pick<ForkPlan, "highWater">>, cursor: Wire<ForkEntryCursor>) { return this.fork.forkEntries(plan, cursor); }
  forkData(plan: Wire<Pick<ForkPlan, "highWater">>, cursor: Wire<ForkDataCursor>) { return this.fork.forkData(plan, cursor); }

  // Export and import (session-export.ts, session-import.ts): pages out; a staged import in.
  exportBegin() { return this.exporter.exportBegin(); }
  exportPage(highWater: number, cursor: Wire<ExportCursor>) { return this.exporter.exportPage(highWater, cursor); }
  importBegin(init: ImportInit) { return this.imports.importBegin(init); }
  importPartBegin(importId: string, part: number) { return this.imports.importPartBegin(importId, part); }
  importLines(importId: string, attempt: string, lines: string[]) { return this.imports.importLines(importId, attempt, lines); }
  importPartEnd(importId: string, attempt: string) { return this.imports.importPartEnd(importId, attempt); }
  importPartAbort(importId: string, attempt: string) { return this.imports.importPartAbort(importId, attempt); }
  importDiscard(importId: string) { return this.imports.importDiscard(importId); }
  importCommit(importId: string) { return this.imports.importCommit(importId); }

  // Branches and entries (session-branches.ts).
  createBranch(name: string, at: string | null, receipt?: ReceiptScope) { return this.grows(() => this.branchesAndEntries.createBranch(name, at, receipt)); }
  branches(query?: NamePageQuery) { return this.branchesAndEntries.branches(query); }
  scanBranch(name: string, scan?: BranchScan) { return this.branchesAndEntries.scanBranch(name, scan); }
  getEntry(id: string) { return this.branchesAndEntries.getEntry(id); }
  findEntries(query?: EntryQuery) { return this.branchesAndEntries.findEntries(query); }
  entriesJson(query: Omit<EntryQuery, "limit"> & { limit: number }) { return this.branchesAndEntries.entriesJson(query); }
  branchEntriesJson(name: string, scan: Omit<BranchScan, "limit"> & { limit: number }) { return this.branchesAndEntries.branchEntriesJson(name, scan); }
  entryJson(id: string) { return this.branchesAndEntries.entryJson(id); }

  // Usage, name, labels, values and lists (session-data.ts).
  scanUsage(scan?: UsageScan) { return this.data.scanUsage(scan); }
  usageJson(scan: { fromSeq?: number; limit: number }) { return this.data.usageJson(scan); }
  stats() { return this.data.stats(); }
  setName(name: string | null) { return this.data.setName(name); }
  updateMetadata(patch: SessionMetadataPatch) { return this.data.updateMetadata(patch); }
  getLabel(entryId: string) { return this.data.getLabel(entryId); }
  // A deletion (null) never grows the session: a full session can still shed what it holds.
  setLabel(entryId: string, label: string | null) { return label === null ? this.data.setLabel(entryId, null) : this.grows(() => this.data.setLabel(entryId, label)); }
  getValue(namespace: string, key: string) { return this.data.getValue(namespace, key); }
  valueJson(namespace: string, key: string) { return this.data.valueJson(namespace, key); }
  setValue(namespace: string, key: string, next: Wire<JsonValue>) { return this.grows(() => this.data.setValue(namespace, key, next)); }
  deleteValue(namespace: string, key: string) { return this.data.deleteValue(namespace, key); }
  appendList(namespace: string, key: string, element: Wire<JsonValue>, receipt?: ReceiptScope) { return this.grows(() => this.data.appendList(namespace, key, element, receipt)); }
  readList(namespace: string, key: string, options?: ListReadOptions) { return this.data.readList(namespace, key, options); }
  listJson(namespace: string, key: string, options: ListPageOptions & { limit: number }) { return this.data.listJson(namespace, key, options); }
  deleteList(namespace: string, key: string) { return this.data.deleteList(namespace, key); }

  // Settings and resources (session-settings.ts).
  settings() { return this.sessionSettings.settings(); }
  updateSettings(patch: Wire<HarnessSettingsPatch>) { return this.sessionSettings.updateSettings(patch); }
  updateSettingsAndMetadata(patch: Wire<HarnessSettingsPatch>, metadata: SessionMetadataPatch) { return this.sessionSettings.updateSettingsAndMetadata(patch, metadata); }
  moveToAgent(bundle: Wire<AgentForSession>, settings?: Wire<HarnessSettingsPatch>, metadata?: SessionMetadataPatch) { return this.agent.moveToAgent(bundle, settings, metadata); }
  setResource(kind: "skills" | "promptTemplates", name: string, body: Wire<Skill | PromptTemplate | null>) { return body === WIRE_NULL ? this.sessionSettings.setResource(kind, name, body) : this.grows(() => this.sessionSettings.setResource(kind, name, body)); }

  // Lanes (session-lanes.ts).
  acquireLane(name: string, createAt?: string | null, configuration?: Wire<LaneConfigPatch>, agent?: boolean) { return this.grows(() => this.laneCommands.acquireLane(name, createAt, configuration, agent)); }
  lanes(query?: NamePageQuery) { return this.laneCommands.lanes(query); }
  laneExecution(name: string) { return this.laneCommands.laneExecution(name); }
  configureLane(name: string, patch: Wire<LaneConfigPatch>) { return this.laneCommands.configureLane(name, patch); }
  enqueue(name: string, kind: "steer" | "followUp" | "nextRun", input: Wire<QueueInput>, receipt?: ReceiptScope) { return this.grows(() => this.laneCommands.enqueue(name, kind, input, receipt)); }
  cancelQueued(name: string, entryId: string) { return this.laneCommands.cancelQueued(name, entryId); }
  appendToLane(name: string, body: Wire<NewBranchEntry>, receipt?: ReceiptScope) { return this.grows(() => this.laneCommands.appendToLane(name, body, receipt)); }
  appendToBranch(name: string, body: Wire<NewBranchEntry>, receipt?: ReceiptScope) { return this.grows(() => this.laneCommands.appendToBranch(name, body, receipt)); }
  laneSnapshot(name: string) { return this.laneCommands.laneSnapshot(name); }

  // Operations (session-operations.ts) and the structural conveniences (session-structural.ts).
  acceptOperation(name: string, request: Wire<OperationRequest>, receipt?: ReceiptScope) { return this.grows(() => this.operations.acceptOperation(name, request, receipt)); }
  acceptAndAwait(name: string, request: Wire<OperationRequest>, waitMs: number, reservation?: HandedReservation, receipt?: ReceiptScope) { return this.grows(() => this.operations.acceptAndAwait(name, request, waitMs, reservation, receipt)); }
  acceptAndAwaitOnHeldSlot(name: string, request: Wire<OperationRequest>, waitMs: number, receipt?: ReceiptScope) { return this.grows(() => this.operations.acceptAndAwaitOnHeldSlot(name, request, waitMs, receipt)); }
  acceptWhileBusy(name: string, request: Wire<RunRequest>, ifBusy: BusyStrategy, receipt?: ReceiptScope) { return this.grows(() => this.operations.acceptWhileBusy(name, request, ifBusy, receipt)); }
  promptWhileBusy(name: string, request: Wire<RunRequest>, ifBusy: BusyStrategy, waitMs: number, reservation?: HandedReservation, receipt?: ReceiptScope) { return this.grows(() => this.operations.promptWhileBusy(name, request, ifBusy, waitMs, reservation, receipt)); }
  handToRunningRun(name: string, request: Wire<RunRequest>, ifBusy: "steer" | "followUp", receipt?: ReceiptScope) { return this.grows(() => this.operations.handToRunningRun(name, request, ifBusy, receipt)); }
  pendingRuns(name: string) { return this.laneCommands.pendingRuns(name); }
  promptOutcome(name: string, operationId: string, waitMs: number) { return this.operations.promptOutcome(name, operationId, waitMs); }
  operation(name: string, operationId: string, waitMs?: number) { return this.operations.operation(name, operationId, waitMs); }
  resumeOperation(name: string, operationId: string, waitMs?: number) { return this.operations.resumeOperation(name, operationId, waitMs); }
  resumeCurrent(name: string, waitMs: number) { return this.operations.resumeCurrent(name, waitMs); }
  abortOperation(name: string, operationId: string, receipt?: ReceiptScope) { return this.operations.abortOperation(name, operationId, receipt); }
  abortCurrent(name: string, waitMs: number, receipt?: ReceiptScope) { return this.operations.abortCurrent(name, waitMs, receipt); }
  sweepDeferred(name: string, operationId: string) { return this.operations.sweepDeferred(name, operationId); }
  navigateAndAwait(name: string, request: Wire<NavigationRequest>, waitMs: number, receipt?: ReceiptScope, reservation?: HandedReservation) { return this.grows(() => this.structural.navigateAndAwait(name, request, waitMs, receipt, reservation)); }
  navigateAlone(name: string, request: Wire<NavigationRequest>, waitMs: number) { return this.grows(() => this.structural.navigateAlone(name, request, waitMs)); }
  compactAndAwait(name: string, request: Wire<CompactionRequest>, waitMs: number, receipt?: ReceiptScope, reservation?: HandedReservation) { return this.grows(() => this.structural.compactAndAwait(name, request, waitMs, receipt, reservation)); }

  // Tools (session-tools.ts) and MCP servers (session-mcp.ts).
  listTools() { return this.tools.listTools(); }
  putTool(name: string, input: Wire<ToolDefinitionInput>) { return this.grows(() => this.tools.putTool(name, input)); }
  deleteTool(name: string) { return this.tools.deleteTool(name); }
  submitToolResult(lane: string, operationId: string, toolCallId: string, result: Wire<ClientToolResult>) { return this.tools.submitToolResult(lane, operationId, toolCallId, result); }
  listMcpServers() { return this.mcp.listMcpServers(); }
  putMcpServer(name: string, input: Wire<McpServerInput>) { return this.grows(() => this.mcp.putMcpServer(name, input)); }
  deleteMcpServer(name: string) { return this.mcp.deleteMcpServer(name); }
  refreshMcpServer(name: string) { return this.mcp.refreshMcpServer(name); }

  // Schedules (session-schedules.ts): a lane's prompts that start on their own; the cron's safety net.
  createSchedule(lane: string, body: Wire<CreateSchedule>, receipt?: ReceiptScope) { return this.schedules.createSchedule(lane, body, receipt); }
  laneSchedules(lane: string) { return this.schedules.laneSchedules(lane); }
  getSchedule(lane: string, id: string) { return this.schedules.getSchedule(lane, id); }
  patchSchedule(lane: string, id: string, body: Wire<PatchSchedule>) { return this.schedules.patchSchedule(lane, id, body); }
  deleteSchedule(lane: string, id: string) { return this.schedules.deleteSchedule(lane, id); }
  scheduleRuns(lane: string, id: string, limit: number, beforeDueAt?: number) { return this.schedules.scheduleRuns(lane, id, limit, beforeDueAt); }
  sweepSchedules() { return this.schedules.sweepSchedules(); }

  // Watch sockets (session-watch.ts): upgrades forwarded by the front worker, hibernatable handlers.
  override fetch(request: Request) { return this.watch.fetch(request); }
  laneSnapshotAt(name: string) { return this.watch.laneSnapshotAt(name); }
  closeWatchesOfKey(keyId: string) { return this.watch.closeWatchesOfKey(keyId); }
  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer) { return this.watch.webSocketMessage(ws, message); }
  override webSocketClose(ws: WebSocket, code: number, reason: string) { return this.watch.webSocketClose(ws, code, reason); }
  override webSocketError(ws: WebSocket) { return this.watch.webSocketError(ws); }

  // In-process only (engine tests reach these through `runInDurableObject`).
  session() { return this.host.session(); }
  harness() { return this.host.harness(); }

  private liveUpdateIntervalMs(lane: string): number {
    return this.watch.liveUpdateIntervalMs(lane);
  }
}
