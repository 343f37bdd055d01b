import type { OperationView } from "../../schema/lane-answers.ts";
import type { DeferredHandle } from "../../schema/messages.ts";
import type { ModelsPort } from "../../harness/execution/models.ts";
import type { LiveUpdatePacing, WakeScheduler } from "../../harness/runtime/core.ts";
import { AgentHarness } from "../../harness/runtime/harness.ts";
import { createToolRegistry, type RemoteTools } from "../../tools/registry.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { DriveOutcome } from "../../harness/runtime/types.ts";
import type { Session } from "../../harness/session/session.ts";
import type { DueWork } from "./due-work/due-work.ts";

/** How long an operation whose pass failed waits before the alarm tries it again. */
export const FAILED_PASS_RETRY_MS = 60_000;

export type { OperationView };

/**
 * Hosts one harness in a SessionObject (ARCHITECTURE D7): created lazily on first use (the
 * constructor stays cheap), drives passes right after acceptance, and lets the alarm resume
 * whatever is due. Passes run with `waitForRetry: false`, so a backoff never pins the object:
 * the wait is a due row and the alarm wakes it.
 */
export class SessionRuntime {
  private ready: Promise<AgentHarness> | undefined;
  private created: AgentHarness | undefined;

  constructor(
    private readonly session: Session,
    private readonly dueWork: DueWork,
    /** The session's Models port (tenant-models.ts), built once per harness. */
    private readonly models: () => ModelsPort,
    /** Called once per harness, before anyone receives it (a watch hub subscribes here). */
    private readonly onHarness: (harness: AgentHarness) => void = () => {},
    /** How http tools reach their endpoints and MCP tools their servers (without it, both are unavailable). */
    private readonly remote?: RemoteTools,
    /** Spacing of a lane's live updates (the watch hub's, by the lane's audience). */
    private readonly liveUpdateIntervalMs?: LiveUpdatePacing,
  ) {}

  harness(): Promise<AgentHarness> {
    this.ready ??= this.create().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private async create(): Promise<AgentHarness> {
    const tools = createToolRegistry({ session: this.session, ...(this.remote && { remote: this.remote }) });
    const { harness } = await AgentHarness.create({
      session: this.session,
      models: this.models(),
      tools,
      wake: this.wakeScheduler(),
      ...(this.liveUpdateIntervalMs && { liveUpdateIntervalMs: this.liveUpdateIntervalMs }),
    });
    this.created = harness;
    this.onHarness(harness);
    return harness;
  }

  /**
   * The due-work table as the harness's wake scheduler, and a pass for work due now that no
   * caller starts: a pending run accepted by the settling commit before it (pending-runs.ts)
   * starts at once, not at the alarm's safety net. After the line is released (a zero timer); a
   * pass already live is joined.
   */
  private wakeScheduler(): WakeScheduler {
    const dueWork = this.dueWork;
    return {
      due: (lane, operationId, at) => {
        dueWork.due(lane, operationId, at);
        if (at <= Date.now()) setTimeout(() => this.startDuePass(lane, operationId), 0);
      },
      settled: (lane, operationId) => dueWork.settled(lane, operationId),
      parked: (lane, operationId) => dueWork.parked(lane, operationId),
      suspended: (lane, operationId, pollAt) => dueWork.suspended(lane, operationId, pollAt),
    };
  }

  private startDuePass(name: string, operationId: string): void {
    const lane = this.created?.getLane(name);
    if (lane?.state.operation?.meta.operationId === operationId) this.startPass(lane, operationId);
  }

  /** Closes the hosted harness (and its session) for good; its successor restores from storage. */
  retire(): void {
    if (this.created) void this.created.close().catch(() => undefined);
    else void this.session.close().catch(() => undefined);
  }

  /** A faulted harness never recovers in place: the object reopens session and harness from storage. */
  get faulted(): boolean {
    return this.created?.faulted === true;
  }

  /** Starts (or joins) the pass of an operation without waiting for it. */
  startPass(lane: AgentLane, operationId: string): void {
    lane.drive({ operationId, waitForRetry: false }).catch(() => undefined);
  }

  /**
   * The alarm body: drive every scheduled operation and every lane's open operation once (at most
   * one per lane; work due now has no row, DueWork.due). Idempotent under re-delivery and early
   * firing: a live pass is joined, a retry not yet due, a parked or a suspended operation answers
   * its wait without writing, a settled operation answers its record, a stale row is dropped.
   */
  async runDue(): Promise<void> {
    try {
      const harness = await this.harness();
      const rows = this.dueWork.all();
      const scheduled = new Set(rows.map((row) => row.operation_id));
      const open = harness
        .lanes()
        .flatMap((info) => (info.operation && !scheduled.has(info.operation.id) ? [{ lane: info.name, operationId: info.operation.id, row: false }] : []));
      const passes = [...rows.map((row) => ({ lane: row.lane, operationId: row.operation_id, row: true })), ...open];
      // Settled one by one: a lane whose pass keeps failing must not starve the others (or the re-arm).
      await Promise.allSettled(
        passes.map(async ({ lane: name, operationId, row }) => {
          const lane = harness.getLane(name);
          if (!lane) return row ? this.dueWork.forget(operationId) : undefined;
          try {
            const driven = await lane.drive({ operationId, waitForRetry: false });
            // Only an operation the lane no longer knows is forgotten (forgetting forwards its
            // settlement, which frees its slot); a harness closed under the pass leaves it open.
            if (!driven.ok && row) {
              if (driven.error.code === "OperationMismatch") this.dueWork.forget(operationId);
              else this.dueWork.postpone(name, operationId, FAILED_PASS_RETRY_MS);
            }
          } catch (error) {
            // The operation is still open: retried later, not in a hot loop.
            this.dueWork.postpone(name, operationId, FAILED_PASS_RETRY_MS);
            throw error;
          }
        }),
      );
    } finally {
      // The delivered alarm is consumed: point it at whatever is still scheduled, whatever failed.
      this.dueWork.rearm();
    }
  }

  /**
   * drive(id) made total for HTTP callers, with an optional bounded wait (`?wait=`): joins the
   * live pass or installs the one pass; a retry wait is slept through only within the bound.
   */
  async awaitOperation(lane: AgentLane, operationId: string, waitMs: number): Promise<OperationView | undefined> {
    const deadline = Date.now() + Math.max(0, waitMs);
    for (;;) {
      const view = operationView(lane, operationId);
      if (!view || view.state === "settled" || Date.now() >= deadline) return view;
      if (view.state === "pending") {
        // A pending run starts with the settlement before it (or is cancelled): wait for that.
        if ((await raceDeadline(lane.untilNotPending(operationId).then(() => true), deadline)) === undefined) return operationView(lane, operationId);
        continue;
      }
      const outcome = await raceDeadline(lane.drive({ operationId, waitForRetry: false }), deadline);
      if (!outcome) return operationView(lane, operationId);
      if (!outcome.ok) return operationView(lane, operationId);
      const driven: DriveOutcome = outcome.value;
      if (driven.kind === "settled") return { state: "settled", result: driven.outcome };
      if (driven.reason !== "retry" || driven.notBefore > deadline) return operationView(lane, operationId);
      await sleep(driven.notBefore - Date.now());
    }
  }
}

/** What GET …/operations/{id} answers without driving. */
export function operationView(lane: AgentLane, operationId: string): OperationView | undefined {
  const current = lane.state.operation;
  if (current?.meta.operationId === operationId) {
    const info = lane.inspectExecution().current;
    const state = current.state;
    return {
      state: "active",
      status: info?.status ?? "open",
      at: state.at,
      ...((state.at === "assistant.retry_wait" || state.at === "summary.retry_wait") && { retry: { attempt: state.nextAttempt, notBefore: state.notBefore } }),
      ...(state.at === "deferred.suspended" && suspendedView(lane)),
    };
  }
  const position = lane.state.pending.indexOf(operationId) + 1;
  if (position > 0) return { state: "pending", position };
  const record = lane.getResult(operationId);
  return record ? { state: "settled", result: record } : undefined;
}

function suspendedView(lane: AgentLane): { deferred?: { handle: DeferredHandle; poll: number } } {
  const wait = lane.deferredWait();
  return wait ? { deferred: { handle: wait.handle, poll: wait.poll } } : {};
}

function raceDeadline<T>(promise: Promise<T>, deadline: number): Promise<T | undefined> {
  const remaining = deadline - Date.now();
  if (remaining <= 0) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), remaining);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
