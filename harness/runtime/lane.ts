import type { Entry } from "../../schema/entries.ts";
import type { JsonValue } from "../../schema/json.ts";
import type {
  CurrentOperationInfo,
  LaneConfiguration,
  LaneExecutionInfo,
  LaneInfo,
  ModelIdentity,
  OperationResultRecord,
  ThinkingLevel,
} from "../../schema/lane.ts";
import type { AgentMessage, AssistantMessage, DeferredHandle, ImageContent } from "../../schema/messages.ts";
import type { Usage } from "../../schema/usage.ts";
import type { BranchScan } from "../session/branch.ts";
import { laneConfig, operationResult } from "../session/builtin-addresses.ts";
import { insertUsage, setValue } from "../session/writes.ts";
import { planRunAcceptance, requestMessages, type OperationAdmission, type OperationRequest } from "./acceptance.ts";
import { planRequestAbort, type AbortRequestResult } from "./abort.ts";
import type { HarnessCore } from "./core.ts";
import type { LaneHandle } from "./drive/pass.ts";
import { Drive, runPass } from "./driver.ts";
import { err, ok, type LaneError, type Result } from "./errors.ts";
import { runLaneCommand, type Planner } from "./lane-command.ts";
import { queueView, type LaneProjection } from "./lane-state.ts";
import { normalizeQueued } from "./messages.ts";
import { planCancelQueued, planEnqueue, planLaneAppend, type AppendInput, type CancelQueuedResult } from "./queue.ts";
import type { DriveOutcome } from "./types.ts";
import { openWatch, type WatchHandle } from "./watch.ts";

export interface DriveOptions {
  operationId: string;
  waitForRetry?: boolean;
  pollDeferred?: boolean;
}

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
export class AgentLane implements LaneHandle {
  private projection: LaneProjection;
  private activeDrive: Drive | undefined;
  private streaming: AssistantMessage | undefined;
  private idleOwner: Promise<void> | undefined;
  private idleWaiters: (() => void)[] = [];

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
  }

  setStreaming(message: AssistantMessage | undefined): void {
    this.streaming = message;
  }

  // Branch surface (operation-aware append).

  getTipId(): string | null {
    return this.projection.tipId;
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
    return this.command(planLaneAppend(this.name, entryId, input), (value) => ok(value));
  }

  // Primitives.

  /** Admits one operation; runs no work (reference §3.1). */
  async accept(request: OperationRequest): Promise<Result<OperationAdmission>> {
    if (this.closed()) return err({ code: "Closed" });
    const now = this.core.clock();
    const messages = requestMessages(request, this.core.resources(), now);
    if (!messages.ok) return err(withLane(messages.error, this.name));
    const operationId = request.operationId ?? this.core.ids.next(now);
    return this.command(planRunAcceptance(this.core, this.name, operationId, messages.value), (value) => value);
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

  /** Durable cancellation of the current operation (reference §4.4); never installs a drive. */
  async requestAbort(operationId: string): Promise<Result<AbortRequestResult>> {
    if (this.closed()) return err({ code: "Closed" });
    const drive = this.activeDrive?.operationId === operationId ? this.activeDrive : undefined;
    let marked!: () => void;
    let failed!: (error: unknown) => void;
    const cancellation = new Promise<void>((resolve, reject) => {
      marked = resolve;
      failed = reject;
    });
    // Admission closes before the marker is queued, so no effect can start in between (§4.3).
    if (drive && this.projection.operation?.meta.operationId === operationId) drive.control.beginAbort(cancellation);
    try {
      const result = await runLaneCommand(this.core, this, planRequestAbort(this.core, this.name, operationId, () => {
        marked();
        drive?.control.signalAbort();
      }));
      if (!result.ok || !result.value.newlyRequested) marked();
      return result;
    } catch (error) {
      failed(error);
      throw error;
    }
  }

  /** One value read: the immutable record of a settled operation. */
  getResult(operationId: string): OperationResultRecord | undefined {
    return this.core.session.getValue(operationResult<OperationResultRecord>(operationId))?.value;
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
    return this.command(planEnqueue(this.name, { entryId, kind }, { type: "message", payload: normalized.message }), (value) => ok(value));
  }

  cancelQueued(entryId: string): Promise<Result<{ kind: CancelQueuedResult }>> {
    return this.command(planCancelQueued(this.name, entryId), (kind) => ok({ kind }));
  }

  // Configuration: identities only; an unknown model fails in-band at generation time.

  getModel(): ModelIdentity {
    return this.projection.configuration.model;
  }
  setModel(model: ModelIdentity): Promise<Result<LaneConfiguration>> {
    return this.configure("model", { ...this.projection.configuration, model }, (c) => c.model);
  }
  getThinkingLevel(): ThinkingLevel {
    return this.projection.configuration.thinkingLevel;
  }
  setThinkingLevel(thinkingLevel: ThinkingLevel): Promise<Result<LaneConfiguration>> {
    return this.configure("thinkingLevel", { ...this.projection.configuration, thinkingLevel }, (c) => c.thinkingLevel);
  }
  getActiveTools(): string[] {
    return this.projection.configuration.activeToolNames;
  }
  setActiveTools(activeToolNames: string[]): Promise<Result<LaneConfiguration>> {
    return this.configure("activeTools", { ...this.projection.configuration, activeToolNames: [...activeToolNames] }, (c) => c.activeToolNames);
  }

  private configure(
    property: "model" | "thinkingLevel" | "activeTools",
    next: LaneConfiguration,
    pick: (configuration: LaneConfiguration) => JsonValue,
  ): Promise<Result<LaneConfiguration>> {
    return this.command<LaneConfiguration, Result<LaneConfiguration>>(
      (_m, state) => ({
        writes: [setValue(laneConfig<LaneConfiguration>(this.name), next)],
        next: { ...state, configuration: next },
        events: () => [{ type: "config_update", lane: this.name, property, value: pick(next), previous: pick(state.configuration) }],
        value: next,
      }),
      (value) => ok(value),
    );
  }

  /** An adjustment row in the usage ledger (reference §1.7). */
  recordUsage(usage: Usage, options: { entryId?: string; details?: JsonValue } = {}): Promise<Result<{ usageId: string }>> {
    const usageId = this.core.ids.next();
    return this.command<{ usageId: string }, Result<{ usageId: string }>>(
      () => ({
        writes: [insertUsage({ id: usageId, usage, adjustment: true, ...options })],
        events: (done) => (done?.usage ?? []).map((row) => ({ type: "usage", lane: this.name, row, totals: done?.commit.stats.usage ?? usage })),
        value: { usageId },
      }),
      (value) => ok(value),
    );
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

  // Conveniences: exact compositions of the primitives (reference §3.9).

  /** accept + drive(waitForRetry). */
  async prompt(prompt: string | AgentMessage | AgentMessage[], images?: ImageContent[]): Promise<Result<OperationResultRecord | SuspendedRun>> {
    const admitted = await this.accept({ kind: "prompt", prompt, ...(images && { images }) });
    if (!admitted.ok) return admitted;
    return this.driveToResult(admitted.value.operationId);
  }

  /** accept a skill request + drive(waitForRetry). */
  async skill(name: string, additionalInstructions?: string): Promise<Result<OperationResultRecord | SuspendedRun>> {
    const admitted = await this.accept({ kind: "skill", name, ...(additionalInstructions !== undefined && { additionalInstructions }) });
    if (!admitted.ok) return admitted;
    return this.driveToResult(admitted.value.operationId);
  }

  /** accept a prompt-template request + drive(waitForRetry). */
  async promptFromTemplate(name: string, args?: string[]): Promise<Result<OperationResultRecord | SuspendedRun>> {
    const admitted = await this.accept({ kind: "prompt_template", name, ...(args !== undefined && { args }) });
    if (!admitted.ok) return admitted;
    return this.driveToResult(admitted.value.operationId);
  }

  /** Inspect the current id, then drive it with one deferred poll permit. */
  async resume(): Promise<Result<OperationResultRecord | SuspendedRun>> {
    const current = this.projection.operation;
    if (!current) return err({ code: "NothingToResume", lane: this.name });
    return this.driveToResult(current.meta.operationId, true);
  }

  /** Inspect the current id, requestAbort it, then drive it to observe reconciliation. */
  async abort(): Promise<Result<{ operationId: string; steer: AgentMessage[]; followUp: AgentMessage[]; record?: OperationResultRecord }>> {
    const current = this.projection.operation;
    if (!current) return err({ code: "NoActiveOperation", lane: this.name });
    const operationId = current.meta.operationId;
    const requested = await this.requestAbort(operationId);
    if (!requested.ok) return requested;
    const driven = await this.drive({ operationId });
    const record = driven.ok && driven.value.kind === "settled" ? driven.value.outcome : undefined;
    return ok({ operationId, steer: requested.value.steer, followUp: requested.value.followUp, ...(record && { record }) });
  }

  private async driveToResult(operationId: string, pollDeferred = false): Promise<Result<OperationResultRecord | SuspendedRun>> {
    for (;;) {
      const driven = await this.drive({ operationId, waitForRetry: true, ...(pollDeferred && { pollDeferred }) });
      if (!driven.ok) return driven;
      const outcome = driven.value;
      if (outcome.kind === "settled") return ok(outcome.outcome);
      if (outcome.reason === "deferred") return ok({ operationId, status: "suspended", deferred: outcome.deferred });
      // A joined pass installed without waitForRetry (joiner options are ignored) stopped at its
      // retry wait: the operation is still current, so drive it again, this time waiting.
    }
  }

  // Observation.

  watch(): Promise<WatchHandle> {
    return openWatch(this.core, this, () => ({ ...(this.streaming && { streaming: this.streaming }), faulted: this.host.isFaulted() }));
  }

  // Internals.

  /** Seals this lane for close/fault: the live pass's gate refuses every further admission. */
  seal(error: Parameters<Drive["control"]["close"]>[0]): void {
    this.activeDrive?.control.close(error);
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  get activePass(): Promise<DriveOutcome> | undefined {
    return this.activeDrive?.completion;
  }

  private install(options: DriveOptions): Drive {
    const drive = new Drive(options.operationId, options.waitForRetry ?? false);
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

export interface SuspendedRun {
  operationId: string;
  status: "suspended";
  deferred: DeferredHandle;
}

function withLane(error: LaneError, lane: string): LaneError {
  return error.code === "InvalidMessage" ? { ...error, lane } : error;
}

/** Races the shared completion against only this caller's signal. */
function observe<T>(completion: Promise<T>, context: CallContext): Promise<T> {
  const signal = context.signal;
  if (!signal) return completion;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error("The caller stopped waiting"));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    completion.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
