import { DurableObject } from "cloudflare:workers";
import { isReservedNamespace, list, value } from "../harness/session/addresses.ts";
import type { BranchScan } from "../harness/session/branch.ts";
import { branchTipInventoryPrefix } from "../harness/session/builtin-addresses.ts";
import { Session, type EntryQuery } from "../harness/session/session.ts";
import type { CommitResult, ListElement, ListReadOptions, UsageScan } from "../harness/session/storage.ts";
import type { Entry } from "../schema/entries.ts";
import type { RpcResult } from "../schema/errors.ts";
import type { Wire } from "../schema/wire.ts";
import type { JsonValue } from "../schema/json.ts";
import type { AgentMessage } from "../schema/messages.ts";
import type { SessionStats, UsageRow } from "../schema/usage.ts";
import type { AbortRequestResult } from "../harness/runtime/abort.ts";
import type { OperationAdmission, OperationRequest } from "../harness/runtime/acceptance.ts";
import type { AgentHarness } from "../harness/runtime/harness.ts";
import type { AgentLane } from "../harness/runtime/lane.ts";
import type { CancelQueuedResult } from "../harness/runtime/queue.ts";
import type { LaneConfiguration, LaneExecutionInfo, LaneInfo, LaneSnapshot, ModelIdentity, ThinkingLevel } from "../schema/lane.ts";
import type { ImageContent } from "../schema/messages.ts";
import type { HarnessSettings, HarnessSettingsPatch } from "../schema/settings.ts";
import { DueWork } from "./due-work.ts";
import { asResult, parseWire, RpcError, unwrapLane } from "./rpc-errors.ts";
import { SessionRuntime, type OperationView } from "./session-runtime.ts";
import { migrate } from "./sql/migrations.ts";
import { SESSION_MIGRATIONS } from "./sql/session-migrations.ts";
import { SqlSessionStorage } from "./sql/sql-session-storage.ts";

export interface SessionInit {
  tenantId: string;
  sessionId: string;
  name?: string;
}

export interface SessionInfo {
  id: string;
  tenantId: string;
  name: string | null;
  createdAt: number;
  parentSessionId?: string;
  stats: SessionStats;
  branches: BranchInfo[];
}

export interface BranchInfo {
  name: string;
  tipId: string | null;
}

export type NewBranchEntry = { message: AgentMessage } | { customType: string; data?: JsonValue };

export interface LaneConfigPatch {
  model?: ModelIdentity;
  thinkingLevel?: ThinkingLevel;
  activeTools?: string[];
}

export interface QueueInput {
  message: string | AgentMessage;
  images?: ImageContent[];
}

/**
 * One session per object, named `${tenantId}:${sessionId}` (ARCHITECTURE D2). A thin shell: it
 * runs migrations, opens the Session over its SQLite storage, and exposes semantic RPC methods whose
 * expected failures come back as tagged values. Tenant and session ids live in the object's own
 * storage, never parsed from `ctx.id.name` (absent in cold alarms, partykit#333).
 */
export class SessionObject extends DurableObject<Env> {
  private opened: { session: Session; storage: SqlSessionStorage; runtime: SessionRuntime } | undefined;
  private readonly dueWork: DueWork;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Synchronous SQL in the constructor blocks other events until it returns; cheap when current.
    migrate(ctx.storage, SESSION_MIGRATIONS);
    this.dueWork = new DueWork(ctx.storage);
    // A restarted object must never forget an open operation (D7, agents#1119).
    if (this.dueWork.earliest() !== undefined) void ctx.blockConcurrencyWhile(() => this.dueWork.ensureArmed());
  }

  /** Drives every due operation; at-least-once delivery is harmless (passes join, records answer). */
  override async alarm(): Promise<void> {
    if (!SqlSessionStorage.open(this.ctx.storage)) return;
    await this.open().runtime.runDue();
  }

  async create(init: SessionInit): Promise<Wire<RpcResult<SessionInfo>>> {
    return asResult(async () => {
      if (SqlSessionStorage.open(this.ctx.storage)) {
        throw new RpcError({ code: "SessionExists", message: `Session ${init.sessionId} already exists` });
      }
      const storage = SqlSessionStorage.create(this.ctx.storage, {
        id: init.sessionId,
        tenantId: init.tenantId,
        createdAt: Date.now(),
      });
      const session = new Session(storage);
      this.opened = { session, storage, runtime: this.runtimeFor(session) };
      if (init.name !== undefined) await session.setName(init.name);
      return this.describe();
    });
  }

  async info(): Promise<Wire<RpcResult<SessionInfo>>> {
    return asResult(() => this.describe());
  }

  async createBranch(name: string, at: string | null): Promise<Wire<RpcResult<BranchInfo>>> {
    return asResult(async () => {
      const branch = await this.session().createBranch(name, at);
      return { name: branch.name, tipId: branch.getTipId() };
    });
  }

  async branches(): Promise<Wire<RpcResult<BranchInfo[]>>> {
    return asResult(() => this.listBranches());
  }

  async appendToBranch(name: string, body: Wire<NewBranchEntry>): Promise<Wire<RpcResult<{ entryId: string }>>> {
    return asResult(async () => {
      const entry = parseWire(body);
      const branch = this.session().branch(name);
      if (!branch) throw new RpcError({ code: "UnknownBranch", message: `Branch "${name}" does not exist` });
      const entryId =
        "message" in entry
          ? await branch.appendMessage(entry.message)
          : await branch.appendCustomEntry(entry.customType, entry.data);
      return { entryId };
    });
  }

  async scanBranch(name: string, scan: BranchScan = {}): Promise<Wire<RpcResult<Entry[]>>> {
    return asResult(() => {
      const branch = this.session().branch(name);
      if (!branch) throw new RpcError({ code: "UnknownBranch", message: `Branch "${name}" does not exist` });
      return branch.findEntries(scan);
    });
  }

  async getEntry(id: string): Promise<Wire<RpcResult<Entry>>> {
    return asResult(() => {
      const entry = this.session().getEntry(id);
      if (!entry) throw new RpcError({ code: "UnknownEntry", message: `Entry ${id} does not exist` });
      return entry;
    });
  }

  async findEntries(query: EntryQuery = {}): Promise<Wire<RpcResult<Entry[]>>> {
    return asResult(() => this.session().findEntries(query));
  }

  async scanUsage(scan: UsageScan = {}): Promise<Wire<RpcResult<UsageRow[]>>> {
    return asResult(() => this.openStorage().scanUsage(scan));
  }

  async stats(): Promise<Wire<RpcResult<SessionStats>>> {
    return asResult(() => this.session().getStats());
  }

  async setName(name: string | null): Promise<Wire<RpcResult<CommitResult>>> {
    return asResult(() => this.session().setName(name ?? undefined));
  }

  async setLabel(entryId: string, label: string | null): Promise<Wire<RpcResult<CommitResult>>> {
    return asResult(() => this.session().setLabel(entryId, label ?? undefined));
  }

  // Application values and lists: `pi` and `pi.*` belong to the runtime and are refused here.

  async getValue(namespace: string, key: string): Promise<Wire<RpcResult<{ value: JsonValue; seq: number } | null>>> {
    return asResult(() => {
      const stored = this.session().getValue(value<JsonValue>(appNamespace(namespace), key));
      return stored ? { value: stored.value, seq: stored.seq } : null;
    });
  }

  async setValue(namespace: string, key: string, next: Wire<JsonValue>): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.session().setValue(value<JsonValue>(appNamespace(namespace), key), parseWire(next));
      return { seq: result.firstSeq };
    });
  }

  async deleteValue(namespace: string, key: string): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.session().deleteValue(value<JsonValue>(appNamespace(namespace), key));
      return { seq: result.firstSeq };
    });
  }

  async appendList(namespace: string, key: string, element: Wire<JsonValue>): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.session().appendList(list<JsonValue>(appNamespace(namespace), key), parseWire(element));
      return { seq: result.firstSeq };
    });
  }

  async readList(namespace: string, key: string, options: ListReadOptions = {}): Promise<Wire<RpcResult<ListElement<JsonValue>[]>>> {
    return asResult(() => this.session().readList(list<JsonValue>(appNamespace(namespace), key), options));
  }

  async deleteList(namespace: string, key: string): Promise<Wire<RpcResult<{ seq: number }>>> {
    return asResult(async () => {
      const result = await this.session().deleteList(list<JsonValue>(appNamespace(namespace), key));
      return { seq: result.firstSeq };
    });
  }

  /** The hosted Session; engine code in tests reaches it through `runInDurableObject`. */
  session(): Session {
    return this.open().session;
  }

  private openStorage(): SqlSessionStorage {
    return this.open().storage;
  }

  private open(): { session: Session; storage: SqlSessionStorage; runtime: SessionRuntime } {
    if (this.opened && !this.opened.session.closed && !this.opened.runtime.faulted) return this.opened;
    const storage = SqlSessionStorage.open(this.ctx.storage);
    if (!storage) throw new RpcError({ code: "SessionNotFound", message: "Session not found" });
    const session = new Session(storage);
    this.opened = { session, storage, runtime: this.runtimeFor(session) };
    return this.opened;
  }

  private runtimeFor(session: Session): SessionRuntime {
    return new SessionRuntime(session, this.dueWork, this.env.SCRIPTED_MODELS === "on");
  }

  /** The hosted harness (engine tests reach it through `runInDurableObject`). */
  harness(): Promise<AgentHarness> {
    return this.open().runtime.harness();
  }

  private async lane(name: string): Promise<AgentLane> {
    const lane = (await this.harness()).getLane(name);
    if (!lane) throw new RpcError({ code: "UnknownLane", message: `Lane "${name}" does not exist` });
    return lane;
  }

  // Lanes, queue and operations (reference §2.3–3.9; exposed by the public API).

  async acquireLane(name: string, createAt?: string | null): Promise<Wire<RpcResult<LaneInfo & { created: boolean }>>> {
    return asResult(async () => {
      const harness = await this.harness();
      const existed = harness.getLane(name) !== undefined;
      const lane = await harness.lane(name, createAt === undefined ? {} : { createAt });
      return { ...lane.info(), created: !existed };
    });
  }

  async lanes(): Promise<Wire<RpcResult<LaneInfo[]>>> {
    return asResult(async () => (await this.harness()).lanes());
  }

  async laneExecution(name: string): Promise<Wire<RpcResult<LaneExecutionInfo>>> {
    return asResult(async () => (await this.lane(name)).inspectExecution());
  }

  async configureLane(name: string, patch: Wire<LaneConfigPatch>): Promise<Wire<RpcResult<LaneConfiguration>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const { model, thinkingLevel, activeTools } = parseWire(patch);
      if (model) unwrapLane(await lane.setModel(model));
      if (thinkingLevel) unwrapLane(await lane.setThinkingLevel(thinkingLevel));
      if (activeTools) unwrapLane(await lane.setActiveTools(activeTools));
      return lane.inspectExecution().configuration;
    });
  }

  /** Admits an operation and starts its pass at once (no alarm latency on the hot path, D7). */
  async acceptOperation(name: string, request: Wire<OperationRequest>): Promise<Wire<RpcResult<OperationAdmission>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const admission = unwrapLane(await lane.accept(parseWire(request)));
      this.open().runtime.startPass(lane, admission.operationId);
      return admission;
    });
  }

  /** drive(id) made total; `waitMs` long-polls until settled or a durable wait (≤ 60 s). */
  async operation(name: string, operationId: string, waitMs = 0): Promise<Wire<RpcResult<OperationView>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const view = await this.open().runtime.awaitOperation(lane, operationId, Math.min(waitMs, 60_000));
      if (!view) throw new RpcError({ code: "OperationMismatch", message: `Operation ${operationId} is unknown on lane ${name}` });
      return view;
    });
  }

  async abortOperation(name: string, operationId: string): Promise<Wire<RpcResult<AbortRequestResult>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const result = unwrapLane(await lane.requestAbort(operationId));
      // Reconciliation needs a pass; requestAbort itself never installs one (§4.4).
      this.open().runtime.startPass(lane, operationId);
      return result;
    });
  }

  async enqueue(name: string, kind: "steer" | "followUp" | "nextRun", input: Wire<QueueInput>): Promise<Wire<RpcResult<{ entryId: string }>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const { message, images } = parseWire(input);
      return unwrapLane(await lane[kind](message, images));
    });
  }

  async cancelQueued(name: string, entryId: string): Promise<Wire<RpcResult<{ result: CancelQueuedResult }>>> {
    return asResult(async () => ({ result: unwrapLane(await (await this.lane(name)).cancelQueued(entryId)).kind }));
  }

  async appendToLane(name: string, body: Wire<NewBranchEntry>): Promise<Wire<RpcResult<{ entryId: string; placed: boolean }>>> {
    return asResult(async () => {
      const lane = await this.lane(name);
      const entry = parseWire(body);
      return unwrapLane("message" in entry ? await lane.appendMessage(entry.message) : await lane.appendCustomEntry(entry.customType, entry.data));
    });
  }

  async laneSnapshot(name: string): Promise<Wire<RpcResult<LaneSnapshot>>> {
    return asResult(async () => {
      const watch = await (await this.lane(name)).watch();
      watch.unsubscribe();
      return watch.snapshot;
    });
  }

  async settings(): Promise<Wire<RpcResult<HarnessSettings>>> {
    return asResult(async () => (await this.harness()).settings());
  }

  async updateSettings(patch: Wire<HarnessSettingsPatch>): Promise<Wire<RpcResult<HarnessSettings>>> {
    return asResult(async () => (await this.harness()).updateSettings(parseWire(patch)));
  }

  private describe(): SessionInfo {
    const { session, storage } = this.open();
    const { metadata } = session;
    return {
      id: metadata.id,
      tenantId: storage.tenantId,
      name: session.getName() ?? null,
      createdAt: metadata.createdAt,
      ...(metadata.parentSessionId !== undefined && { parentSessionId: metadata.parentSessionId }),
      stats: session.getStats(),
      branches: this.listBranches(),
    };
  }

  private listBranches(): BranchInfo[] {
    return this.session()
      .scanValues(branchTipInventoryPrefix())
      .map((tip) => ({ name: tip.address.key, tipId: tip.value }));
  }
}

function appNamespace(namespace: string): string {
  if (isReservedNamespace(namespace)) {
    throw new RpcError({ code: "ReservedNamespace", message: `Namespace "${namespace}" is reserved for the runtime` });
  }
  return namespace;
}
