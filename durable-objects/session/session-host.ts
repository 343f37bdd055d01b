import { StructuralContinuations } from "./structural-continuations.ts";
import type { AgentForSession } from "../../tools/tenant-copies.ts";
import type { AgentHarness } from "../../harness/runtime/harness.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import { branchTipInventoryPrefix, sessionAgent, sessionMetadata, type AgentBinding } from "../../harness/session/builtin-addresses.ts";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import { Session } from "../../harness/session/session.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { ModelIdentity, ThinkingLevel } from "../../schema/lane.ts";
import type { AgentMessage, ImageContent } from "../../schema/messages.ts";
import type { Branch } from "../../schema/session.ts";
import type { HarnessResources } from "../../schema/settings.ts";
import type { HarnessSettingsPatch } from "../../schema/settings-patch.ts";
import type { ToolDefinitionInput } from "../../schema/tools.ts";
import type { SessionStats } from "../../schema/usage.ts";
import { type Wire } from "../../schema/wire.ts";
import { DueWork, type RecordedWork } from "./due-work/due-work.ts";
import { HeldSlots } from "./held-slots.ts";
import { IdempotencyStore, type IdempotencyClaim, type IdempotencyReplay } from "../rpc/idempotency.ts";
import { RpcError } from "../rpc/rpc-errors.ts";
import { SessionRuntime } from "./session-runtime.ts";
import { TenantModelAccess } from "./tenant-model-access.ts";
import { LazySchema } from "../sql/lazy-schema.ts";
import { SESSION_MIGRATIONS } from "./storage/session-migrations.ts";
import { SqlSessionStorage } from "./storage/sql-session-storage.ts";
import type { DeferredRegistrar } from "./due-work/deferred-registrations.ts";
import { deferredRegistrar, settlementForwarder, type ForwardsHost } from "./due-work/session-forwards.ts";
import { FORWARD_COALESCE_MS, type HandedReservation, type SettlementForwarder } from "./due-work/settlement-outbox.ts";
import type { ToolDefinitionContext } from "./tool-definition-input.ts";
import type { RemoteTools } from "../../tools/registry.ts";

export interface SessionInit {
  tenantId: string;
  sessionId: string;
  name?: string;
  /** A settings patch over the defaults (JSON text of `HarnessSettingsPatch`, validated by the edge). */
  settings?: Wire<HarnessSettingsPatch>;
  /** The session's skills and prompt templates (JSON text of `HarnessResources`, validated by the edge). */
  resources?: Wire<HarnessResources>;
  /** Tool definitions by name (JSON text, validated by the edge; checked further before anything is written). */
  tools?: Wire<Record<string, ToolDefinitionInput>>;
  /** The session's metadata (validated by the edge: at most 16 keys), written with the rest of the creation. */
  metadata?: Record<string, string>;
  /** The agent version the session is bound to, with the tenant's sealed copies for it (the tenant's `agentForSession`). */
  agent?: Wire<AgentForSession>;
  /**
   * Names one creating request (derived from its Idempotency-Key): a repeat of that request finds
   * the session it created and gets it back instead of `SessionExists`.
   */
  creationToken?: string;
}

export interface SessionInfo {
  id: string;
  tenantId: string;
  name: string | null;
  createdAt: number;
  parentSessionId?: string;
  /** The agent version the session is bound to. */
  agent?: AgentVersionRef;
  /** `{}` when the session has none. */
  metadata: Record<string, string>;
  stats: SessionStats;
  branches: BranchInfo[];
}

export type BranchInfo = Branch;

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

/** The open session: its storage, the Session over it and the runtime that hosts its harness. */
export interface OpenedSession {
  session: Session;
  storage: SqlSessionStorage;
  runtime: SessionRuntime;
}

/** What the host tells the object's other modules, once per hosted harness and per lane. */
export interface SessionHostHooks {
  /**
   * Run once per hosted harness before any caller (RPC, alarm, WebSocket) gets it, so a
   * subscription made here misses no event of that harness. Must not throw.
   */
  harnessCreated(harness: AgentHarness): void;
  /** How far apart a lane's live updates go out (the watch widens it for large audiences). */
  liveUpdateIntervalMs(lane: string): number;
  /** A run used the tools of an MCP server whose cached tool list is past its TTL. */
  mcpServerStale(name: string): void;
  /** The alarm's part for schedules: due ones fire, registrations are forwarded (session-schedules.ts). Must not reject. */
  schedulesDue(): Promise<void>;
}

/**
 * The host state of the SessionObject (ARCHITECTURE D2, D7): migrations in a cheap constructor
 * (only for an object that holds a session: sql/lazy-schema.ts; a read of an unknown session
 * writes nothing, and creation makes the schema), the Session and its harness opened lazily over
 * the object's SQLite storage, the due work with its outboxes, and the alarm that resumes it.
 * Tenant and session ids live in the object's own storage, never parsed from `ctx.id.name`
 * (absent in cold alarms, partykit#333). A plain class: the object composes it with its
 * capability modules (session-object.ts).
 */
export class SessionHost {
  private opened: OpenedSession | undefined;
  readonly dueWork: DueWork;
  readonly schema: LazySchema;
  /** The models the session's tenant may use, its credentials and defaults (tenant-model-access.ts). */
  readonly models: TenantModelAccess;
  /** Open-operation slots held ahead of each lane's next prompt (held-slots.ts). */
  readonly heldSlots: HeldSlots;
  private readonly forwarder: SettlementForwarder;
  private readonly registrar: DeferredRegistrar;
  /**
   * A settlement forward on its timer (forwardAfterCommit): later commits before it fires ride on
   * it. `coalesced`: waiting out FORWARD_COALESCE_MS, as no lane waits on it for a slot.
   */
  private settlementForward: { timer: ReturnType<typeof setTimeout>; coalesced: boolean } | undefined;

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
    private readonly hooks: SessionHostHooks,
  ) {
    // Synchronous SQL in the constructor blocks other events until it returns; cheap when current,
    // and read-only for an object that holds no session.
    this.schema = new LazySchema(ctx.storage, SESSION_MIGRATIONS);
    this.models = new TenantModelAccess(env, () => this.existingStorage()?.tenantId);
    this.heldSlots = new HeldSlots(
      () => env.TENANTS.getByName(this.open().storage.tenantId),
      () => this.open().storage.metadata.id,
    );
    this.dueWork = new DueWork(ctx.storage, Date.now, (what) => this.forwardAfterCommit(what));
    const forwards: ForwardsHost = { env, dueWork: this.dueWork, heldSlots: this.heldSlots, holdsSession: () => this.schema.exists, storage: () => this.existingStorage() };
    this.forwarder = settlementForwarder(forwards);
    this.registrar = deferredRegistrar(forwards);
    // A restarted object must never forget an open operation nor an unforwarded settlement (D7,
    // agents#1119): the alarm covers both.
    // So does a structural convenience's continuation still owed (structural-continuations.ts).
    const alarmAt = this.schema.exists ? (this.dueWork.restartAlarmAt() ?? (new StructuralContinuations(ctx.storage).owed().length > 0 ? Date.now() : undefined)) : undefined;
    if (alarmAt !== undefined) void ctx.blockConcurrencyWhile(() => this.dueWork.ensureArmed(alarmAt));
  }

  /**
   * The stored session, or undefined when this object holds none (nothing is written to find out).
   * The open session's storage when there is one: opening reads the counters and the rows after
   * their checkpoint, which an existence check (every alarm, every idempotent POST) need not repeat.
   */
  existingStorage(): SqlSessionStorage | undefined {
    if (this.opened && !this.opened.session.closed) return this.opened.storage;
    return this.storedSession();
  }

  /** The session as stored, read afresh (a faulted predecessor's memory is not trusted). */
  private storedSession(): SqlSessionStorage | undefined {
    return this.schema.exists ? SqlSessionStorage.open(this.ctx.storage) : undefined;
  }

  /**
   * D15: claim an Idempotency-Key for a creating POST on this session. Only an existing session
   * owns keys, so a request for an unknown session writes nothing here.
   */
  async idempotencyClaim(key: string, requestHash: string): Promise<IdempotencyClaim | { state: "no_session" }> {
    if (!this.existingStorage()) return { state: "no_session" };
    return new IdempotencyStore(this.ctx.storage.sql).claim(key, requestHash);
  }

  async idempotencyComplete(key: string, requestHash: string, replay: IdempotencyReplay | null): Promise<void> {
    if (this.schema.exists) new IdempotencyStore(this.ctx.storage.sql).complete(key, requestHash, replay);
  }

  /**
   * Drives every due operation and forwards the settlement outbox; at-least-once delivery is
   * harmless (passes join, records answer, the tenant applies a repeated forward once).
   */
  async alarm(): Promise<void> {
    this.dueWork.alarmDelivered();
    if (!this.existingStorage()) return;
    // A failed forward postpones its rows and re-arms; it must not stop the due passes.
    const forwarded = Promise.all([this.forwarder.kick().catch(() => undefined), this.registrar.kick().catch(() => undefined), this.hooks.schedulesDue().catch(() => undefined)]);
    try {
      await this.open().runtime.runDue();
    } finally {
      await forwarded;
      if (this.schema.exists) {
        // What the tenant acknowledged since the last commit is stored here when no turn followed.
        this.dueWork.flushAcknowledged();
        this.dueWork.rearm();
      }
    }
  }

  /** The hosted Session; engine code in tests reaches it through `runInDurableObject`. */
  session(): Session {
    return this.open().session;
  }

  openStorage(): SqlSessionStorage {
    return this.open().storage;
  }

  open(): OpenedSession {
    if (this.opened && !this.opened.session.closed && !this.opened.runtime.faulted) return this.opened;
    const storage = this.storedSession();
    if (!storage) throw new RpcError({ code: "SessionNotFound", message: "Session not found" });
    // A faulted (or closed) predecessor is retired before its successor restores: its line is
    // sealed, its gates closed and its admitted work signalled, so only one harness ever writes.
    this.opened?.runtime.retire();
    return this.adopt(storage);
  }

  /** Opens a session just created (or forked) in this object's storage. */
  adopt(storage: SqlSessionStorage): OpenedSession {
    const session = new Session(storage);
    this.opened = { session, storage, runtime: this.runtimeFor(session, storage.tenantId) };
    return this.opened;
  }

  /** Hands the open session over for deletion: the object holds none from here on. */
  release(): OpenedSession | undefined {
    const opened = this.opened;
    this.opened = undefined;
    return opened;
  }

  private runtimeFor(session: Session, tenantId: string): SessionRuntime {
    return new SessionRuntime(session, this.dueWork, () => this.models.port(session), (harness) => {
      this.forwardUsage(harness);
      this.hooks.harnessCreated(harness);
    }, this.remoteTools(tenantId), (lane) => this.hooks.liveUpdateIntervalMs(lane));
  }

  /** What a tool definition is checked and sealed with (creation and `PUT …/tools/{name}`). */
  toolDefinitionContext(sessionId: string): ToolDefinitionContext {
    return { sessionId, secretsKey: this.env.SECRETS_KEY, allowLoopback: this.env.LOCAL_DEV === "on" };
  }

  private remoteTools(tenantId: string): RemoteTools {
    const reach = { secretsKey: this.env.SECRETS_KEY, allowLoopback: this.env.LOCAL_DEV === "on" };
    return { tenantId, http: reach, mcp: { ...reach, onStaleServer: (name) => this.hooks.mcpServerStale(name) } };
  }

  /**
   * Called inside the settling (or suspending) mutation, once its outbox (or registration) row is
   * written, and after a commit that wrote usage rows: the forward starts after the commit, outside
   * the mutation line, on a zero-delay timer: by then the commit's events, delivered in
   * microtasks, have all run. The tenant object (or the DeferredIndex shard) hears of it only once
   * the batch is durable (the output gate holds the call until then). A forward lost with the
   * object is repeated by the alarm. A settlement forward already on its timer reads everything
   * committed before it fires, so a settling commit's usage row rides on it.
   *
   * A forward goes at once only when a lane waits on it for its next held slot; otherwise it waits
   * FORWARD_COALESCE_MS, so turns settled back to back (a lane reusing its slot) make one tenant
   * call between them, not one each. The tenant's view (usage totals, webhooks, the release of a
   * bound slot) follows by that much more; a deleted session tells it first (`forwardPending`).
   */
  private forwardAfterCommit(what: RecordedWork): void {
    if (what === "registrations") {
      setTimeout(() => this.ctx.waitUntil(this.registrar.kick().catch(() => undefined)), 0);
      return;
    }
    // One on its timer carries this commit too. A lane that waits for its slot does not wait out the
    // coalescing: the forward goes right after this commit, like any other.
    if (this.settlementForward) {
      if (this.settlementForward.coalesced && this.heldSlots.wanted()) setTimeout(() => this.forwardForSlots(), 0);
      return;
    }
    const timer = setTimeout(() => {
      // By now the commit's events have run: a prompt that gave its slot back to its lane asks for none.
      if (this.heldSlots.wanted()) return this.sendSettlementForward();
      this.settlementForward = { timer: setTimeout(() => this.sendSettlementForward(), FORWARD_COALESCE_MS), coalesced: true };
    }, 0);
    this.settlementForward = { timer, coalesced: false };
  }

  /** A lane now waits for its next held slot: a forward waiting out its coalescing goes at once. */
  forwardForSlots(): void {
    if (this.settlementForward?.coalesced) this.sendSettlementForward();
  }

  /** The forward on its timer goes now (off the timer). */
  private sendSettlementForward(): Promise<void> {
    if (this.settlementForward) clearTimeout(this.settlementForward.timer);
    this.settlementForward = undefined;
    const sent = this.forwarder.kick().catch(() => undefined);
    this.ctx.waitUntil(sent);
    return sent;
  }

  /**
   * Everything the tenant was not told yet goes now, before the session's storage is deleted: the
   * tenant's usage totals count a deleted session's turns too (docs/api-tenants.md). That is a
   * forward still on its timer, and also one that failed earlier and waits for its alarm's retry,
   * or one an eviction lost: the forward sends every row past the tenant's acknowledged mark, and
   * makes no call when there is none.
   */
  async forwardPending(): Promise<void> {
    await this.sendSettlementForward();
  }

  /** The worker's reservation of `operationId`'s slot, freed with the settlement (SettlementOutbox.takeOver). */
  takeOverReservation(operationId: string, reservation: HandedReservation): void {
    this.dueWork.outbox.takeOver(operationId, reservation);
  }

  /**
   * The settled operation's slot stays with the session for its lane's next prompt: true when its
   * release was taken off the settlement (SettlementOutbox.reclaim).
   */
  keepReservation(operationId: string): boolean {
    return this.dueWork.outbox.reclaim(operationId);
  }

  /** The accept answered before its operation settled: the worker binds the slot (SettlementOutbox.bound). */
  reservationBound(operationId: string): void {
    this.dueWork.outbox.bound(operationId);
  }

  /**
   * The tenant's usage totals: a commit that wrote usage-ledger rows starts a forward a moment
   * after it (due-work/usage-outbox.ts); a row committed with a settlement rides on that settlement's
   * forward (one tenant call per turn, not two: forwardAfterCommit). A forward that
   * fails or dies with the object is repeated (the alarm retries it; the settlement outbox and
   * every open operation arm it anyway), and the tenant applies each row once.
   */
  private forwardUsage(harness: AgentHarness): void {
    harness.events.on("usage", () => this.forwardAfterCommit("settled"));
  }

  /** The hosted harness (engine tests reach it through `runInDurableObject`). */
  harness(): Promise<AgentHarness> {
    return this.open().runtime.harness();
  }

  async lane(name: string): Promise<AgentLane> {
    const lane = (await this.harness()).getLane(name);
    if (!lane) throw new RpcError({ code: "UnknownLane", message: `Lane "${name}" does not exist` });
    return lane;
  }

  /** Every branch included: bounded by SESSION_LIMITS.branches (the REST API pages them instead). */
  describe(): SessionInfo {
    return { ...this.summary(), branches: this.listBranches() };
  }

  /** The session's own fields, without its branches. */
  summary(): Omit<SessionInfo, "branches"> {
    const { session, storage } = this.open();
    const { metadata } = session;
    return {
      id: metadata.id,
      tenantId: storage.tenantId,
      name: session.getName() ?? null,
      createdAt: metadata.createdAt,
      ...(metadata.parentSessionId !== undefined && { parentSessionId: metadata.parentSessionId }),
      metadata: session.getValue(sessionMetadata)?.value ?? {},
      ...agentOf(session.getValue(sessionAgent)?.value),
      stats: session.getStats(),
    };
  }

  listBranches(): BranchInfo[] {
    return this.session()
      .scanValues(branchTipInventoryPrefix())
      .map((tip) => ({ name: tip.address.key, tipId: tip.value }));
  }
}

function agentOf(binding: AgentBinding | undefined): { agent?: AgentVersionRef } {
  return binding ? { agent: { id: binding.id, version: binding.version } } : {};
}
