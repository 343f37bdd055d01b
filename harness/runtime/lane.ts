import type { Entry } from "../../schema/entries.ts";
import type { JsonObject, JsonValue } from "../../schema/json.ts";
import type {
  CurrentOperationInfo,
  HarnessEvent,
  LaneConfiguration,
  LaneExecutionInfo,
  LaneInfo,
  LaneSnapshot,
  ModelIdentity,
  OperationResultRecord,
  ThinkingLevel,
  ToolResultView,
} from "../../schema/lane.ts";
import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import type { AgentMessage, DeferredHandle, ImageContent } from "../../schema/messages.ts";
import type { Usage } from "../../schema/usage.ts";
import type { BranchScan } from "../session/branch.ts";
import type { SessionMutator } from "../session/mutation.ts";
import { readResultOn } from "./operation-codec.ts";
import { planRunAcceptance, requestMessages, type OperationAdmission, type OperationRequest, type RunRequest } from "./acceptance.ts";
import type { FirstRequest } from "./first-request.ts";
import { acceptWhileBusy, type BusyPromptAnswer, type IfBusy } from "./busy-prompts.ts";
import { planCancelPendingRun, type StoredPendingRun } from "./pending-runs.ts";
import { pendingRun } from "../session/builtin-addresses.ts";
import { planNavigationAcceptance } from "./navigation.ts";
import { planCompactionAcceptance } from "./compaction.ts";
import { requestAbort, type AbortRequestResult } from "./abort.ts";
import type { GateControl } from "../execution/effect-gate.ts";
import type { HarnessCore } from "./core.ts";
import type { LaneHandle } from "./drive/pass.ts";
import { acceptAndDrive, abortCurrent, resumeCurrent, type AbortResult, type SuspendedRun, navigateAndContinue, type StructuralOutcome, compactAndContinue, type CompactionOutcome } from "./conveniences.ts";
import { Drive, observe, runPass } from "./driver.ts";
import { err, ok, type LaneError, type Result } from "./errors.ts";
import { planConfigure, planReconfigure, planRecordUsage, type ConfigChange } from "./lane-config.ts";
import { runLaneCommand, type Planner } from "./lane-command.ts";
import { queueView, type LaneProjection } from "./lane-state.ts";
import { normalizeQueued, type PromptInput } from "./messages.ts";
import { planCancelQueued, planEnqueue, planLaneAppend, type AppendInput, type CancelQueuedResult } from "./queue.ts";
import type { AcceptOptions, DriveOptions, DriveOutcome } from "./types.ts";
export type { DriveOptions } from "./types.ts";
import { ContextCache } from "./context-cache.ts";
import { storedHandle } from "./deferred-handle.ts";
import { planSubmitToolResult } from "./tool-results.ts";
import { LiveResponse } from "./live-response.ts";
import { captureSnapshot } from "./snapshot.ts";
import { openWatch, type WatchHandle } from "./watch.ts";

/** The caller's invocation authority: aborting it stops only this caller's wait (§2.6). */
export interface CallContext {
  signal?: AbortSignal;
}

/** Process-local hooks the harness gives each lane (closing, faults, pass failures). */
export interface LaneHost {
  isClosed(): boolean;
  isFaulted(): boolean;
  /** A detached pass failed in a way that is not a pass-local failure. */
  passFailed(lane: string, error: unknown): void;
}

/**
 * An AgentLane (reference §2.3): one Branch plus agent configuration, inbox and at most one open
 * operation. Every command is one mutation on the session line; the projection it publishes is
 * authoritative while this process owns the session.
 */
export type { SuspendedRun } from "./conveniences.ts";

export class AgentLane implements LaneHandle {
  private projection: LaneProjection;
  private activeDrive: Drive | undefined;
  private readonly streaming = new LiveResponse();
  /** Live partials of running tool calls, by tool call id (process-local, like the streaming partial). */
  private readonly toolPartials = new Map<string, ToolResultView>();
  /** The warm context path (QUALITY P11): process-local, rebuilt from storage on demand. */
  private readonly context = new ContextCache();
  private idleOwner: Promise<void> | undefined;
  /** Callers waiting for a pending run to start (or be cancelled). */
  private readonly pendingWaiters: { operationId: string; resolve: () => void }[] = [];
  private idleWaiters: (() => void)[] = [];
  private toolResultWaiters: (() => void)[] = [];
  /** The request intent an acceptance carried and no pass has sent yet (`takeRequestPermit`). */
  private unsentRequest: { operationId: string; responseEntryId: string } | undefined;

  constructor(
    private readonly core: HarnessCore,
    private readonly host: LaneHost,
    readonly name: string,
    projection: LaneProjection,
  ) {
    this.projection = projection;
  }

  get state(): LaneProjection {
    return this.projection;
  }

  publish(next: LaneProjection): void {
    this.projection = next;
    this.notifyIdle();
    if (this.pendingWaiters.length > 0) {
      for (const waiter of this.pendingWaiters.splice(0)) {
        if (next.pending.includes(waiter.operationId)) this.pendingWaiters.push(waiter);
        else waiter.resolve();
      }
    }
  }

  /** Resolves once `operationId` is no longer pending on this lane (it started or was cancelled). */
  untilNotPending(operationId: string): Promise<void> {
    if (!this.projection.pending.includes(operationId)) return Promise.resolve();
    return new Promise((resolve) => this.pendingWaiters.push({ operationId, resolve }));
  }

  contextPath(): readonly Entry[] {
    const tipId = this.projection.tipId;
    if (tipId === null) return [];
    return this.context.read(tipId, () => this.core.session.scanBranch({ start: tipId, order: "newestFirst", stopAtType: "compaction" }).reverse());
  }

  placed(entries: readonly Entry[]): void {
    this.context.placed(entries);
  }

  /** What an operation placed between its two tips, when the warm context still holds it (context-cache.ts `since`). */
  placedBetween(fromTipId: string | null, tipId: string): readonly Entry[] | undefined {
    return this.context.since(fromTipId, tipId);
  }

  setStreaming(partial: ProviderAssistant, pendingUpdate: () => HarnessEvent | undefined): void {
    this.streaming.set(partial, pendingUpdate);
  }

  takeStreaming(): ProviderAssistant | undefined {
    return this.streaming.take();
  }

  setToolPartial(toolCallId: string, partial: ToolResultView | undefined): void {
    if (partial) this.toolPartials.set(toolCallId, partial);
    else this.toolPartials.delete(toolCallId);
  }

  // Branch surface (operation-aware append).

  getTipId(): string | null {
    return this.projection.tipId;
  }

  /** The current operation's deferred wait (suspended, or a poll in flight), with its handle. */
  deferredWait(): { handle: DeferredHandle; poll: number; at: "deferred.suspended" | "deferred.effect_pending" } | undefined {
    const state = this.projection.operation?.state;
    if (state?.at !== "deferred.suspended" && state?.at !== "deferred.effect_pending") return undefined;
    const stored = storedHandle(this.core.session, state.sourceEntryId);
    return stored && { handle: stored.handle, poll: state.poll, at: state.at };
  }

  findEntries(scan: BranchScan = {}): Entry[] {
    const start = scan.start ?? this.projection.tipId;
    return start === null ? [] : this.core.session.scanBranch({ ...scan, start });
  }

  findEntry(scan: BranchScan = {}): Entry | undefined {
    return this.findEntries({ ...scan, limit: 1 })[0];
  }

  appendMessage(message: AgentMessage): Promise<Result<{ entryId: string; placed: boolean }>> {
    if (message.role === "assistant" && message.stopReason === "pending") {
      return Promise.resolve(err({ code: "InvalidMessage", lane: this.name, reason: "pending_assistant" }));
    }
    return this.append({ type: "message", message });
  }

  appendCustomEntry(customType: string, data: JsonValue | undefined): Promise<Result<{ entryId: string; placed: boolean }>> {
    return this.append({ type: "custom", customType, ...(data !== undefined && { data }) });
  }

  private append(input: AppendInput): Promise<Result<{ entryId: string; placed: boolean }>> {
    const entryId = this.core.ids.next();
    return this.command(planLaneAppend(this.name, entryId, input), (value) => value);
  }

  // Primitives.

  /**
   * Admits one operation; runs no work (reference §3.1). `drivenAtOnce`: the caller drives it at
   * once in this process, so a run's acceptance may carry its first request intent
   * (first-request.ts); the request is then sent by this process's first pass over it.
   */
  async accept(request: OperationRequest, options: AcceptOptions = {}): Promise<Result<OperationAdmission>> {
    if (this.closed()) return err({ code: "Closed" });
    const now = this.core.clock();
    const operationId = request.operationId ?? this.core.ids.next(now);
    if (request.kind === "navigation") return this.command(planNavigationAcceptance(this.core, this.name, operationId, request), (value) => value);
    if (request.kind === "compaction") return this.command(planCompactionAcceptance(this.core, this.name, operationId, request, () => this.contextPath()), (value) => value);
    const messages = requestMessages(request, this.core.resources(), now);
    if (!messages.ok) return err(withLane(messages.error, this.name));
    const drivenAtOnce = options.drivenAtOnce ? { lane: this, carried: (first: FirstRequest) => (this.unsentRequest = { operationId, responseEntryId: first.state.responseEntryId }) } : undefined;
    return this.command(planRunAcceptance(this.core, this.name, operationId, messages.value, request.deferred, drivenAtOnce), (value) => value);
  }

  /**
   * Whether a pass may send the request of this intent rather than recover it: true once, for an
   * intent this process committed with its acceptance and has not sent (process-local: after a
   * restart the intent's outcome is unknown, reference §4.6).
   */
  takeRequestPermit(operationId: string, responseEntryId: string): boolean {
    const unsent = this.unsentRequest;
    if (unsent?.operationId !== operationId || unsent.responseEntryId !== responseEntryId) return false;
    this.unsentRequest = undefined;
    return true;
  }

  /**
   * A run request under a busy strategy (spec "Prompt while busy", busy-prompts.ts): on an idle
   * lane every strategy starts the run; `reject` is `accept`. `withoutSlot`: the caller holds no
   * open-operation slot, so a steer or follow-up is only handed to a running run. `keepQueuedInput`:
   * an interrupt keeps the aborted run's steers and follow-ups queued for the next run.
   */
  async acceptWhileBusy(request: RunRequest, ifBusy: IfBusy, options: { withoutSlot?: boolean; keepQueuedInput?: boolean } = {}): Promise<Result<BusyPromptAnswer>> {
    if (ifBusy === "reject") {
      const accepted = await this.accept(request);
      return accepted.ok ? ok({ admission: accepted.value }) : accepted;
    }
    if (this.closed()) return err({ code: "Closed" });
    const now = this.core.clock();
    const operationId = request.operationId ?? this.core.ids.next(now);
    const messages = requestMessages(request, this.core.resources(), now);
    if (!messages.ok) return err(withLane(messages.error, this.name));
    while (this.idleOwner) await this.idleOwner;
    const entryIds = messages.value.map(() => this.core.ids.next(now));
    return acceptWhileBusy(this.core, this, { operationId, messages: messages.value, deferred: request.deferred, ifBusy, entryIds, ...(options.withoutSlot && { withoutSlot: true }), ...(options.keepQueuedInput && { keepQueuedInput: true }) });
  }

  /** The lane's pending runs in line (1: next to start), with when each was accepted. */
  pendingRuns(): { operationId: string; position: number; acceptedAt: number }[] {
    return this.projection.pending.flatMap((operationId, index) => {
      const stored = this.core.session.getValue(pendingRun<StoredPendingRun>(operationId))?.value;
      return stored ? [{ operationId, position: index + 1, acceptedAt: stored.acceptedAt }] : [];
    });
  }

  /**
   * The deferred modes the lane's pending runs asked for (each starts on the lane's model of its
   * turn): a change of that model is checked against them as against the session's own mode.
   */
  pendingDeferredModes(): NonNullable<StoredPendingRun["deferred"]>[] {
    return this.projection.pending.flatMap((operationId) => {
      const mode = this.core.session.getValue(pendingRun<StoredPendingRun>(operationId))?.value.deferred;
      return mode === undefined ? [] : [mode];
    });
  }

  /**
   * drive(id), total over ids (reference §4.1): the current operation installs or joins the one
   * pass; a settled id answers its record (however old); anything else is OperationMismatch.
   */
  async drive(options: DriveOptions, context: CallContext = {}): Promise<Result<DriveOutcome>> {
    for (;;) {
      if (this.closed()) return err({ code: "Closed" });
      if (context.signal?.aborted) throw context.signal.reason ?? new Error("The caller stopped waiting");
      const current = this.projection.operation;
      if (current?.meta.operationId === options.operationId) {
        const active = this.activeDrive;
        if (active && active.operationId !== options.operationId) {
          await active.completion.catch(() => undefined);
          continue;
        }
        const drive = active ?? this.install(options);
        return ok(await observe(drive.completion, context));
      }
      const record = this.getResult(options.operationId);
      if (record) return ok({ kind: "settled", outcome: record });
      return err(this.mismatch(options.operationId));
    }
  }

  /**
   * A client tool's result for a waiting call (ARCHITECTURE D11): stored on the line, once; the
   * caller then drives the operation so its pass stages the result.
   */
  async submitToolResult(operationId: string, toolCallId: string, result: JsonObject): Promise<Result<{ accepted: true }>> {
    const submitted = await this.command(planSubmitToolResult(this.core, this.name, operationId, toolCallId, result), (value) => value);
    if (submitted.ok) for (const resolve of this.toolResultWaiters.splice(0)) resolve();
    return submitted;
  }

  /** Resolves at the next accepted client tool result on this lane (for in-process waiters). */
  nextToolResult(): Promise<void> {
    return new Promise((resolve) => this.toolResultWaiters.push(resolve));
  }

  /** Durable cancellation of the current operation (reference §4.4); never installs a drive. */
  async requestAbort(operationId: string): Promise<Result<AbortRequestResult>> {
    if (this.closed()) return err({ code: "Closed" });
    if (this.projection.pending.includes(operationId)) {
      // A pending run is cancelled before it starts: its record says so (pending-runs.ts).
      const cancelled = await runLaneCommand(this.core, this, planCancelPendingRun(this.core, this.name, operationId));
      if (cancelled.ok || !this.projection.pending.includes(operationId)) {
        return cancelled.ok ? ok({ operationId, newlyRequested: true, steer: [], followUp: [] }) : this.requestAbort(operationId);
      }
      return cancelled;
    }
    return requestAbort(this.core, this, operationId);
  }

  /** The gate of the live pass of `operationId`, if one runs now (abort signals it). */
  liveGate(operationId: string): GateControl | undefined {
    return this.activeDrive?.operationId === operationId ? this.activeDrive.control : undefined;
  }

  /** One value read: the immutable record of a settled operation of this lane. */
  getResult(operationId: string): OperationResultRecord | undefined {
    return readResultOn(this.core.session, operationId, this.name);
  }

  inspectExecution(): LaneExecutionInfo {
    const current = this.currentInfo();
    const at = this.projection.operation?.state.at;
    return {
      lane: this.name,
      tipId: this.projection.tipId,
      configuration: this.projection.configuration,
      current: current && at ? { ...current, at } : null,
      lastOperationId: this.projection.lastOperationId,
      queues: queueView(this.projection),
    };
  }

  info(): LaneInfo {
    return { name: this.name, tipId: this.projection.tipId, operation: this.currentInfo() };
  }

  // Queue.

  steer(message: string | AgentMessage, images?: ImageContent[]): Promise<Result<{ entryId: string }>> {
    return this.enqueue("steer", message, images);
  }

  followUp(message: string | AgentMessage, images?: ImageContent[]): Promise<Result<{ entryId: string }>> {
    return this.enqueue("followUp", message, images);
  }

  nextRun(message: string | AgentMessage, images?: ImageContent[]): Promise<Result<{ entryId: string }>> {
    return this.enqueue("nextRun", message, images);
  }

  private enqueue(kind: "steer" | "followUp" | "nextRun", input: string | AgentMessage, images?: ImageContent[]): Promise<Result<{ entryId: string }>> {
    const now = this.core.clock();
    const normalized = normalizeQueued(input, images, now);
    if (!normalized.ok) return Promise.resolve(err({ code: "InvalidMessage", lane: this.name, reason: normalized.reason }));
    const entryId = this.core.ids.next(now);
    return this.command(planEnqueue(this.name, { entryId, kind }, { type: "message", payload: normalized.message }), (value) => value);
  }

  cancelQueued(entryId: string): Promise<Result<{ kind: CancelQueuedResult }>> {
    return this.command(planCancelQueued(this.name, entryId), (kind) => ok({ kind }));
  }

  // Configuration: identities only; an unknown model fails in-band at generation time.

  getModel(): ModelIdentity {
    return this.projection.configuration.model;
  }
  setModel(model: ModelIdentity): Promise<Result<LaneConfiguration>> {
    return this.configure({ property: "model", value: model });
  }
  getThinkingLevel(): ThinkingLevel {
    return this.projection.configuration.thinkingLevel;
  }
  setThinkingLevel(thinkingLevel: ThinkingLevel): Promise<Result<LaneConfiguration>> {
    return this.configure({ property: "thinkingLevel", value: thinkingLevel });
  }
  getActiveTools(): string[] {
    return this.projection.configuration.activeToolNames;
  }
  setActiveTools(activeToolNames: string[]): Promise<Result<LaneConfiguration>> {
    // A set: each request declares one tool per name (a repeat would be declared twice).
    return this.configure({ property: "activeTools", value: [...new Set(activeToolNames)] });
  }

  /**
   * Several properties at once, in one commit (lane-config.ts planReconfigure); `accept` checks the
   * next configuration on the line, against the session as it is then (a throw writes nothing).
   */
  reconfigure(patch: Partial<LaneConfiguration>, accept?: (next: LaneConfiguration) => void): Promise<Result<LaneConfiguration>> {
    return this.command(planReconfigure(this.name, patch, accept), (value) => ok(value));
  }

  private configure(change: ConfigChange): Promise<Result<LaneConfiguration>> {
    return this.command(planConfigure(this.name, change), (value) => ok(value));
  }

  /** An adjustment row in the usage ledger (reference §1.7). */
  recordUsage(usage: Usage, options: { entryId?: string; details?: JsonValue } = {}): Promise<Result<{ usageId: string }>> {
    return this.command(planRecordUsage(this.name, this.core.ids.next(), usage, options), (value) => ok(value));
  }

  // Idle ownership (process-local).

  /** Resolves once there is no current operation and no active drive. */
  async waitForIdle(): Promise<void> {
    // After close or a fault an open operation never ends here: waiting would never resolve.
    this.core.assertOpen();
    if (this.isIdle()) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.core.assertOpen();
  }

  /** Runs `callback` as the exclusive idle owner: every lane command waits until it returns. */
  async runWhenIdle<T>(callback: () => T | Promise<T>): Promise<T> {
    for (;;) {
      // Close (or a fault) rejects callbacks that have not started (reference §2.3).
      this.core.assertOpen();
      await this.waitForIdle();
      this.core.assertOpen();
      if (!this.idleOwner) break;
      await this.idleOwner;
    }
    let release!: () => void;
    this.idleOwner = new Promise<void>((resolve) => (release = resolve));
    try {
      return await callback();
    } finally {
      this.idleOwner = undefined;
      release();
    }
  }

  // Conveniences: exact compositions of the primitives (reference §3.9), in conveniences.ts.

  prompt(prompt: PromptInput, images?: ImageContent[]): Promise<Result<OperationResultRecord | SuspendedRun>> {
    return acceptAndDrive(this, { kind: "prompt", prompt, ...(images && { images }) });
  }
  skill(name: string, additionalInstructions?: string): Promise<Result<OperationResultRecord | SuspendedRun>> {
    return acceptAndDrive(this, { kind: "skill", name, ...(additionalInstructions !== undefined && { additionalInstructions }) });
  }
  promptFromTemplate(name: string, args?: string[]): Promise<Result<OperationResultRecord | SuspendedRun>> {
    return acceptAndDrive(this, { kind: "prompt_template", name, ...(args !== undefined && { args }) });
  }
  /** Navigation, then the continuation run when queued input is eligible (conveniences.ts). */
  navigate(targetId: string | null, options: { label?: string; summarize?: boolean; customInstructions?: string } = {}): Promise<Result<StructuralOutcome>> {
    return navigateAndContinue(this, { kind: "navigation", targetId, ...options });
  }
  /** Manual compaction, then the continuation run when queued input is eligible (conveniences.ts). */
  compact(customInstructions?: string): Promise<Result<CompactionOutcome>> {
    return compactAndContinue(this, { kind: "compaction", ...(customInstructions !== undefined && { customInstructions }) });
  }
  resume(): Promise<Result<OperationResultRecord | SuspendedRun>> {
    return resumeCurrent(this);
  }
  abort(): Promise<Result<AbortResult>> {
    return abortCurrent(this);
  }

  // Observation.

  watch(): Promise<WatchHandle> {
    return openWatch(this.core, (m) => this.captureSnapshot(m));
  }

  /**
   * This lane's snapshot, captured inside the caller's no-commit mutation (reference §5.3): for
   * hosts that subscribe on the line themselves (openWatch, an EventFeed capture).
   */
  captureSnapshot(m: SessionMutator): LaneSnapshot {
    const streaming = this.streaming.capture((event) => void this.core.events.emitBatch([event]));
    const live = { ...(streaming && { streaming }), faulted: this.host.isFaulted(), toolPartials: this.toolPartials };
    return captureSnapshot(m, this.name, this.projection, live);
  }

  // Internals.

  /**
   * Seals this lane for close/fault: the live pass's gate refuses every further admission, and
   * admitted provider and tool work is signalled to stop — nothing it produces can commit any
   * more, so letting it run would only spend tokens (§4.7: a host may signal cooperative work).
   */
  seal(error: Parameters<Drive["control"]["close"]>[0]): void {
    this.activeDrive?.control.close(error);
    this.activeDrive?.control.signalAbort();
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  get activePass(): Promise<DriveOutcome> | undefined {
    return this.activeDrive?.completion;
  }

  /** The live pass's options as installed (joiners' options are ignored, §4.1). */
  passInfo(): { operationId: string; waitForRetry: boolean; deferredPermits: number } | undefined {
    const drive = this.activeDrive;
    return drive && { operationId: drive.operationId, waitForRetry: drive.waitForRetry, deferredPermits: drive.permits };
  }

  private install(options: DriveOptions): Drive {
    const drive = new Drive(options.operationId, options.waitForRetry ?? false, options.pollDeferred ?? false);
    this.activeDrive = drive;
    drive.completion = runPass(this.core, this, drive);
    drive.completion.then(
      () => this.finished(drive),
      (error: unknown) => {
        this.finished(drive);
        this.host.passFailed(this.name, error);
      },
    );
    return drive;
  }

  private finished(drive: Drive): void {
    if (this.activeDrive === drive) this.activeDrive = undefined;
    this.notifyIdle();
  }

  /** After a fault every call rejects with HarnessFault; after close, Result channels say Closed. */
  private closed(): boolean {
    if (this.host.isFaulted()) this.core.assertOpen();
    return this.host.isClosed();
  }

  private isIdle(): boolean {
    return this.projection.operation === null && this.activeDrive === undefined;
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private currentInfo(): CurrentOperationInfo | null {
    const operation = this.projection.operation;
    if (!operation) return null;
    const { meta, state } = operation;
    const status = state.control.status === "cancel_requested" ? "aborting" : this.activeDrive?.operationId === meta.operationId ? "running" : "open";
    const captured = "generationContext" in state ? { capturedModel: state.generationContext.configuration.model } : {};
    return { id: meta.operationId, kind: meta.intent.kind, startedAt: meta.startedAt, status, ...captured };
  }

  private mismatch(operationId: string): LaneError {
    const current = this.projection.operation?.meta.operationId;
    const last = this.projection.lastOperationId;
    return {
      code: "OperationMismatch",
      lane: this.name,
      expectedOperationId: operationId,
      ...(current !== undefined && { currentOperationId: current }),
      ...(last !== null && { lastOperationId: last }),
    };
  }

  /** Every lane command: closed check, idle-owner exclusion, then one mutation. */
  private async command<T, R>(planner: Planner<T>, wrap: (value: T) => R): Promise<R | { ok: false; error: { code: "Closed" } }> {
    if (this.closed()) return err({ code: "Closed" });
    while (this.idleOwner) await this.idleOwner;
    return wrap(await runLaneCommand(this.core, this, planner));
  }
}

function withLane(error: LaneError, lane: string): LaneError {
  return error.code === "InvalidMessage" ? { ...error, lane } : error;
}
