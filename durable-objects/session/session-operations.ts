import type { AbortOutcome } from "../../schema/lane-answers.ts";
import type { AbortRequestResult } from "../../harness/runtime/abort.ts";
import type { OperationAdmission, OperationRequest, RunRequest } from "../../harness/runtime/acceptance.ts";
import type { BusyPromptAnswer, IfBusy } from "../../harness/runtime/busy-prompts.ts";
import type { PromptAdmission } from "../../harness/runtime/pending-runs.ts";
import type { Interrupted, QueuedPrompt } from "../../schema/lane-answers.ts";
import type { AgentLane } from "../../harness/runtime/lane.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";
import type { DeferredHandle } from "../../schema/messages.ts";
import type { Wire } from "../../schema/wire.ts";
import type { HandedReservation } from "./due-work/settlement-outbox.ts";
import type { TakenSlot } from "./held-slots.ts";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import { once, type ReceiptScope } from "../rpc/idempotency.ts";
import { asResult, laneApiError, parseWire, RpcError, unwrapLane } from "../rpc/rpc-errors.ts";
import type { OperationView } from "./session-runtime.ts";
import { appendedMessages, placedBy } from "./appended-messages.ts";
import { assertCanDefer } from "./deferred-check.ts";
import { pollSuspended } from "./sweep-poll.ts";
import type { SessionHost } from "./session-host.ts";

/**
 * What a waiting convenience answers (reference §3.9 over HTTP): the settled record, a run
 * suspended on a deferred response, or the id of an operation still going when the wait ran out.
 */
export type ConvenienceOutcome<Settled = OperationResultRecord> =
  | { state: "settled"; result: Settled }
  | { state: "suspended"; operationId: string; deferred: DeferredHandle }
  | { state: "pending"; operationId: string };

/** The abort convenience: requestAbort's answer plus the record when reconciliation settled in time. */
export type { AbortOutcome };

/** The strategies a prompt may ask for besides the plain acceptance (`reject`). */
export type BusyStrategy = Exclude<IfBusy, "reject">;

/** `POST …/operations` under `ifBusy`: the admission or place in line (with what an interrupt drained), or the queued prompt. */
export type BusyAdmission = (PromptAdmission & { interrupted?: Interrupted }) | QueuedPrompt;

/** `POST …/prompt` under `ifBusy`: the run's outcome (with what an interrupt drained), or the queued prompt. */
export type BusyPromptOutcome =
  | { state: "settled"; result: PromptAnswer & { interrupted?: Interrupted } }
  | ({ state: "suspended"; operationId: string; deferred: DeferredHandle } & { interrupted?: Interrupted })
  | ({ state: "pending"; operationId: string } & { interrupted?: Interrupted })
  | QueuedPrompt;

function queuedAnswer(queued: Extract<BusyPromptAnswer, { queued: unknown }>["queued"]): QueuedPrompt {
  return { operationId: queued.operationId, entryId: queued.entryId, queued: queued.kind };
}

/** A prompt that found no running run to take it without a slot (handToRunningRun). */
const SLOT_NEEDED = Symbol("slot needed");

/** An answer of a caller that holds a slot: `slotNeeded` is only answered to a caller without one. */
function withSlot(answer: BusyPromptAnswer): Exclude<BusyPromptAnswer, { slotNeeded: true }> {
  if ("slotNeeded" in answer) throw new Error("A prompt accepted with a slot was answered as one without");
  return answer;
}

/** What an interrupt drained from the operation it aborted, as answered. */
function interruptedOf(answer: Extract<BusyPromptAnswer, { admission: unknown }>): { interrupted?: Interrupted } {
  const drained = answer.interrupted;
  return drained ? { interrupted: { operationId: drained.operationId, steer: drained.steer, followUp: drained.followUp } } : {};
}

/** What this module reaches of the host (session-host.ts). */
type OperationsHost = Pick<SessionHost, "ctx" | "existingStorage" | "forwardForSlots" | "harness" | "heldSlots" | "keepReservation" | "lane" | "open" | "openStorage" | "reservationBound" | "takeOverReservation">;

/**
 * A prompt on a held slot still running this long is bound to it at the tenant, which then counts
 * the session as active (session search) and keeps the slot until the settlement's forward frees it.
 */
export const HELD_SLOT_BIND_AFTER_MS = 1_000;

/**
 * Operations over RPC (reference §3.1–3.9, §4.1, §4.4): accept, drive, resume, abort, and the waiting conveniences.
 * An accepting method takes the caller's claimed Idempotency-Key (`receipt`): the acceptance is
 * made once per key (rpc/idempotency.ts `once`), and a repeat after a crash waits on the operation
 * the first one accepted.
 */
export class SessionOperations {
  constructor(private readonly host: OperationsHost) {}

  /** Admits an operation and starts its pass at once (no alarm latency on the hot path, D7). */
  async acceptOperation(name: string, request: Wire<OperationRequest>, receipt?: ReceiptScope): Promise<Wire<RpcResult<OperationAdmission>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const admission = await this.acceptDrivenAtOnce(lane, request, receipt);
      this.host.open().runtime.startPass(lane, admission.operationId);
      return admission;
    });
  }

  /** drive(id) made total; `waitMs` long-polls until settled or a durable wait (≤ 60 s). */
  async operation(name: string, operationId: string, waitMs = 0): Promise<Wire<RpcResult<OperationView>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const view = await this.host.open().runtime.awaitOperation(lane, operationId, Math.min(waitMs, 60_000));
      if (!view) throw new RpcError({ code: "OperationMismatch", message: `Operation ${operationId} is unknown on lane ${name}` });
      return view;
    });
  }

  /**
   * resume primitive: one deferred poll permit for the current operation (joins a live pass,
   * whose options stand), then the same answer as `operation`.
   */
  async resumeOperation(name: string, operationId: string, waitMs = 0): Promise<Wire<RpcResult<OperationView>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      if (lane.state.operation?.meta.operationId === operationId) this.startPollingPass(lane, operationId);
      const view = await this.host.open().runtime.awaitOperation(lane, operationId, Math.min(waitMs, 60_000));
      if (!view) throw new RpcError({ code: "OperationMismatch", message: `Operation ${operationId} is unknown on lane ${name}` });
      return view;
    });
  }

  /**
   * prompt / skill / template convenience: accept (starting the pass), then wait within `waitMs`.
   * A settled run answers its record with the messages it appended, so one call gets the answer.
   */
  async acceptAndAwait(name: string, request: Wire<OperationRequest>, waitMs: number, reservation?: HandedReservation, receipt?: ReceiptScope): Promise<Wire<RpcResult<ConvenienceOutcome<PromptAnswer>>>> {
    // The worker reserved the slot, and binds it when the answer comes before the settlement.
    return asResult(() => this.promptAndAwait(name, request, waitMs, receipt, reservation && { reservation, boundBy: "worker" }));
  }

  /**
   * `acceptAndAwait` on the open-operation slot this session holds ahead for the lane
   * (held-slots.ts), so a warm prompt makes no tenant call on its path: null when none is held (the
   * worker then reserves one and calls `acceptAndAwait`). A refused accept keeps the slot for the
   * next prompt; one that settles unbound within the request gives the slot back to the lane
   * (`promptAndAwait`); an operation still running after HELD_SLOT_BIND_AFTER_MS (or answered
   * before it settled) is bound to it, and the lane's next slot is asked for with the settlement's
   * forward.
   */
  async acceptAndAwaitOnHeldSlot(name: string, request: Wire<OperationRequest>, waitMs: number, receipt?: ReceiptScope): Promise<Wire<RpcResult<ConvenienceOutcome<PromptAnswer>>> | null> {
    const taken = this.host.heldSlots.take(name, Date.now());
    if (taken === undefined) return null;
    let opened = false;
    const answer = await asResult(() => this.promptAndAwait(name, request, waitMs, receipt, { boundBy: "session", taken }, () => (opened = true)));
    if (!opened) this.host.heldSlots.putBack(name, taken);
    return answer;
  }

  /**
   * `acceptAndAwait` on a slot this session reserved itself, not one held ahead (a structural
   * convenience's continuation run: session-structural.ts). It counts as an open operation at the
   * tenant from the start: released with the settlement, bound by this session when the run
   * outlives the answer, freed when the accept is refused.
   */
  async acceptAndAwaitOnReservation(name: string, request: Wire<OperationRequest>, waitMs: number, reservation: HandedReservation): Promise<Wire<RpcResult<ConvenienceOutcome<PromptAnswer>>>> {
    let opened = false;
    const answer = await asResult(() => this.promptAndAwait(name, request, waitMs, undefined, { boundBy: "self", reservation }, () => (opened = true)));
    if (!opened) this.host.heldSlots.release(reservation.reservationId);
    return answer;
  }

  /**
   * Accepts a prompt (once per claimed key), starts its pass and waits within `waitMs`; a settled
   * run answers its record with the messages it appended. The slot it was accepted on is handed to
   * the settlement; one still open when answered (or, bound by this session, after
   * HELD_SLOT_BIND_AFTER_MS) is bound, so its release survives a crash. A held slot whose
   * operation settled unbound goes back to the lane, its release taken off the settlement (the
   * tenant never learns it was used; it expires there by itself); otherwise the lane asks for its
   * next held slot (acceptAndAwaitOnHeldSlot) with this operation's settlement forward.
   */
  private async promptAndAwait(
    name: string,
    request: Wire<OperationRequest>,
    waitMs: number,
    receipt: ReceiptScope | undefined,
    slot: { boundBy: "worker" | "self"; reservation: HandedReservation } | { boundBy: "session"; taken: TakenSlot } | undefined,
    opened: () => void = () => undefined,
  ): Promise<ConvenienceOutcome<PromptAnswer>> {
    const lane = await this.host.lane(name);
    const { operationId } = await this.acceptDrivenAtOnce(lane, request, receipt);
    opened();
    const reservation = slot && (slot.boundBy === "session" ? slot.taken.slot : slot.reservation);
    if (reservation !== undefined) this.host.takeOverReservation(operationId, reservation);
    this.host.open().runtime.startPass(lane, operationId);
    if (slot?.boundBy !== "session") this.host.heldSlots.want(name);
    const firstWait = slot?.boundBy === "session" ? Math.min(waitMs, HELD_SLOT_BIND_AFTER_MS) : waitMs;
    let outcome = await this.outcomeWithin(lane, operationId, firstWait);
    if (slot?.boundBy === "session") {
      this.keepOrBindHeldSlot(name, operationId, slot.taken, outcome.state === "settled");
      if (outcome.state === "pending" && waitMs > firstWait) outcome = await this.outcomeWithin(lane, operationId, waitMs - firstWait);
    } else if (outcome.state !== "settled" && reservation !== undefined) {
      this.host.reservationBound(operationId);
      // The worker binds its own reservation; one this session reserved, the session binds.
      if (slot?.boundBy === "self") this.host.heldSlots.bind(reservation, operationId, name);
    }
    if (outcome.state !== "settled") return outcome;
    return { state: "settled", result: this.withMessages(lane, outcome.result) };
  }

  /**
   * `acceptOperation` on the slot this session holds ahead for the lane (a socket's `prompt`
   * command), null when none is held: answered at once, the slot decided off the answer's path as
   * a prompt's is. A refused accept keeps the slot for the next prompt; a run that settles unbound
   * within HELD_SLOT_BIND_AFTER_MS gives it back to the lane; one still running then is bound to it.
   */
  async acceptOperationOnHeldSlot(name: string, request: Wire<OperationRequest>, receipt?: ReceiptScope): Promise<Wire<RpcResult<OperationAdmission>> | null> {
    const taken = this.host.heldSlots.take(name, Date.now());
    if (taken === undefined) return null;
    let opened = false;
    const answer = await asResult(async () => {
      const lane = await this.host.lane(name);
      const admission = await this.acceptDrivenAtOnce(lane, request, receipt);
      opened = true;
      const { operationId } = admission;
      this.host.takeOverReservation(operationId, taken.slot);
      this.host.open().runtime.startPass(lane, operationId);
      void this.outcomeWithin(lane, operationId, HELD_SLOT_BIND_AFTER_MS).then(
        (outcome) => this.keepOrBindHeldSlot(name, operationId, taken, outcome.state === "settled"),
        () => this.keepOrBindHeldSlot(name, operationId, taken, false),
      );
      return admission;
    });
    if (!opened) this.host.heldSlots.putBack(name, taken);
    return answer;
  }

  /**
   * A held slot's operation, HELD_SLOT_BIND_AFTER_MS after its acceptance or sooner: settled
   * unbound, the slot goes back to the lane (its release taken off the settlement); otherwise the
   * lane asks for its next slot with the settlement's forward, and one still running is bound to
   * its slot, so its release survives a crash.
   */
  private keepOrBindHeldSlot(name: string, operationId: string, taken: TakenSlot, settled: boolean): void {
    if (settled && this.host.keepReservation(operationId)) return this.host.heldSlots.putBack(name, taken);
    this.wantSlot(name);
    if (settled) return;
    this.host.reservationBound(operationId);
    this.host.heldSlots.bind(taken.slot, operationId, name);
  }

  /** The lane asks for its next held slot with the forward that is due (sent now if it was waiting). */
  private wantSlot(name: string): void {
    this.host.heldSlots.want(name);
    this.host.forwardForSlots();
  }

  /**
   * The prompt convenience's answer for a run already accepted, within `waitMs`: a streamed
   * prompt's last event (worker/routes/operations.ts), the same body as the JSON answer.
   */
  async promptOutcome(name: string, operationId: string, waitMs: number): Promise<Wire<RpcResult<ConvenienceOutcome<PromptAnswer>>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const outcome = await this.outcomeWithin(lane, operationId, waitMs);
      return outcome.state === "settled" ? { state: "settled", result: this.withMessages(lane, outcome.result) } : outcome;
    });
  }

  /** A settled run's record with the messages it appended (the prompt answer). */
  private withMessages(lane: AgentLane, result: OperationResultRecord): PromptAnswer {
    return { ...result, ...appendedMessages(this.host.openStorage(), result, placedBy(lane, result)) };
  }

  /**
   * A prompt under `ifBusy` (spec "Prompt while busy"): the run started, its place in line, or the
   * running operation it was handed to; an interrupt also answers what it drained.
   */
  /** `keepQueuedInput`: an interrupt whose caller cannot take the drained input back (a schedule's) keeps it queued for the next run. */
  async acceptWhileBusy(name: string, request: Wire<RunRequest>, ifBusy: BusyStrategy, receipt?: ReceiptScope, options: { keepQueuedInput?: boolean } = {}): Promise<Wire<RpcResult<BusyAdmission>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const answer = await this.madeOnce(receipt, async () => withSlot(unwrapLane(await lane.acceptWhileBusy(await this.runnable(lane, parseWire(request)), ifBusy, options))));
      if ("queued" in answer) return queuedAnswer(answer.queued);
      if (!("state" in answer.admission)) this.host.open().runtime.startPass(lane, answer.admission.operationId);
      return { ...answer.admission, ...interruptedOf(answer) };
    });
  }

  /**
   * The prompt convenience under `ifBusy`: as `acceptWhileBusy`, then the run's outcome within
   * `waitMs` (a pending run's wait includes its time in line); a prompt handed to the running
   * operation answers at once.
   */
  async promptWhileBusy(name: string, request: Wire<RunRequest>, ifBusy: BusyStrategy, waitMs: number, reservation?: HandedReservation, receipt?: ReceiptScope): Promise<Wire<RpcResult<BusyPromptOutcome>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const answer = await this.madeOnce(receipt, async () => withSlot(unwrapLane(await lane.acceptWhileBusy(await this.runnable(lane, parseWire(request)), ifBusy))));
      if ("queued" in answer) return queuedAnswer(answer.queued);
      const { operationId } = answer.admission;
      if (reservation !== undefined) this.host.takeOverReservation(operationId, reservation);
      if (!("state" in answer.admission)) this.host.open().runtime.startPass(lane, operationId);
      const outcome = await this.outcomeWithin(lane, operationId, waitMs);
      const interrupted = interruptedOf(answer);
      if (outcome.state !== "settled") {
        if (reservation !== undefined) this.host.reservationBound(operationId);
        return { ...outcome, ...interrupted };
      }
      return { state: "settled", result: { ...this.withMessages(lane, outcome.result), ...interrupted } };
    });
  }

  /**
   * A steer or follow-up (`ifBusy`) handed to the lane's running run, which needs no open-operation
   * slot (spec "Prompt while busy": it opens no operation): null, with nothing written or
   * remembered under the receipt, when no run takes it (an idle lane, a compaction or navigation
   * current); the caller then reserves a slot and asks again (`acceptWhileBusy`, `promptWhileBusy`).
   */
  async handToRunningRun(name: string, request: Wire<RunRequest>, ifBusy: "steer" | "followUp", receipt?: ReceiptScope): Promise<Wire<RpcResult<QueuedPrompt | null>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      try {
        const answer = await this.madeOnce(receipt, async () => {
          const handed = unwrapLane(await lane.acceptWhileBusy(await this.runnable(lane, parseWire(request)), ifBusy, { withoutSlot: true }));
          // Thrown, not answered: a receipt remembers what its effect answered.
          if (!("queued" in handed)) throw SLOT_NEEDED;
          return handed;
        });
        return queuedAnswer(answer.queued);
      } catch (error) {
        if (error === SLOT_NEEDED) return null;
        throw error;
      }
    });
  }

  /** resume convenience: the current operation with one deferred poll permit (NothingToResume when idle). */
  async resumeCurrent(name: string, waitMs: number): Promise<Wire<RpcResult<ConvenienceOutcome>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const current = lane.state.operation;
      if (!current) throw new RpcError(laneApiError({ code: "NothingToResume", lane: name }));
      const operationId = current.meta.operationId;
      this.startPollingPass(lane, operationId);
      return this.outcomeWithin(lane, operationId, waitMs);
    });
  }

  /**
   * abort convenience: requestAbort(current), then the reconciliation pass, observed within `waitMs`.
   * With a claimed key (`receipt`) the request is made once and its answer kept with the key: the
   * steers and follow-ups it hands back exist nowhere else, so a repeat after a lost answer must
   * answer them again (a second requestAbort would hand back nothing, or find no operation).
   */
  async abortCurrent(name: string, waitMs: number, receipt?: ReceiptScope): Promise<Wire<RpcResult<AbortOutcome>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const requested = await this.madeOnce(receipt, async () => {
        const current = lane.state.operation;
        if (!current) throw new RpcError(laneApiError({ code: "NoActiveOperation", lane: name }));
        return unwrapLane(await lane.requestAbort(current.meta.operationId));
      });
      const { operationId } = requested;
      const runtime = this.host.open().runtime;
      runtime.startPass(lane, operationId);
      const view = await runtime.awaitOperation(lane, operationId, Math.min(waitMs, 60_000));
      return { ...requested, ...(view?.state === "settled" && { record: view.result }) };
    });
  }

  /** requestAbort(id); with a claimed key, made once and answered again as `abortCurrent` says. */
  async abortOperation(name: string, operationId: string, receipt?: ReceiptScope): Promise<Wire<RpcResult<AbortRequestResult>>> {
    return asResult(async () => {
      const lane = await this.host.lane(name);
      const result = await this.madeOnce(receipt, async () => unwrapLane(await lane.requestAbort(operationId)));
      // Reconciliation needs a pass; requestAbort itself never installs one (§4.4).
      this.host.open().runtime.startPass(lane, operationId);
      return result;
    });
  }

  /**
   * The cron sweep's question about a run its DeferredIndex shard holds (ARCHITECTURE D8): a run
   * still suspended gets one poll permit (its pass starts, after a live pass without a permit
   * ends: sweep-poll.ts; the sweep does not wait for it) and is
   * "resumed", or "expired" when its handle is past its expiry (that pass fails it
   * `deferred_expired`); anything else (settled, aborted, resumed by a client, the session gone)
   * is "gone", and the shard drops the row.
   */
  async sweepDeferred(name: string, operationId: string): Promise<"resumed" | "expired" | "gone"> {
    if (!this.host.existingStorage()) return "gone";
    const lane = (await this.host.harness()).getLane(name);
    const current = lane?.state.operation;
    if (!lane || current?.meta.operationId !== operationId) return "gone";
    const wait = lane.deferredWait();
    if (!wait) return "gone";
    pollSuspended(lane, operationId).catch(() => undefined);
    return wait.handle.expiresAt !== undefined && Date.now() >= wait.handle.expiresAt ? "expired" : "resumed";
  }

  /**
   * The acceptance (or abort request) made once per claimed key. A repeat starts the same pass again, which joins or
   * finds the operation the first one accepted (startPass of a settled operation only reads its record).
   */
  private madeOnce<T>(receipt: ReceiptScope | undefined, effect: () => Promise<T>): Promise<T> {
    return once(this.host.ctx.storage.sql, receipt, effect);
  }

  /**
   * Accepts (once per claimed key) an operation its caller starts at once in this object, so a
   * run's acceptance may carry its first request intent (harness first-request.ts).
   */
  private acceptDrivenAtOnce(lane: AgentLane, request: Wire<OperationRequest>, receipt: ReceiptScope | undefined): Promise<OperationAdmission> {
    return this.madeOnce(receipt, async () => unwrapLane(await lane.accept(await this.deferrable(lane, parseWire(request)), { drivenAtOnce: true })));
  }

  /** A run request whose deferred mode the lane's model can serve (`deferrable`), typed as one. */
  private async runnable(lane: AgentLane, request: RunRequest): Promise<RunRequest> {
    await this.deferrable(lane, request);
    return request;
  }

  /** A run request whose deferred mode (its own, else the session's) the lane's model can serve (422 otherwise). */
  private async deferrable(lane: AgentLane, request: OperationRequest): Promise<OperationRequest> {
    if (request.kind === "prompt" || request.kind === "skill" || request.kind === "prompt_template") {
      const mode = request.deferred ?? (await this.host.harness()).settings().streamOptions.deferred;
      assertCanDefer(mode, [{ lane: lane.name, model: lane.getModel() }]);
    }
    return request;
  }

  /** Starts (or joins) the pass of the current operation with one deferred poll permit (§3.11). */
  private startPollingPass(lane: AgentLane, operationId: string): void {
    lane.drive({ operationId, waitForRetry: false, pollDeferred: true }).catch(() => undefined);
  }

  /**
   * Waits through SessionRuntime.awaitOperation, which joins the one pass (waiting never starts a
   * second one, D7). A run parked on a deferred response answers its handle: a drive without a
   * poll permit touches nothing and returns the wait.
   */
  async outcomeWithin(lane: AgentLane, operationId: string, waitMs: number): Promise<ConvenienceOutcome> {
    const view = await this.host.open().runtime.awaitOperation(lane, operationId, Math.min(Math.max(0, waitMs), 60_000));
    if (view?.state === "settled") return view;
    if (view?.state === "active" && view.at === "deferred.suspended") {
      const driven = await lane.drive({ operationId, waitForRetry: false });
      const outcome = driven.ok ? driven.value : undefined;
      if (outcome?.kind === "settled") return { state: "settled", result: outcome.outcome };
      if (outcome?.reason === "deferred") return { state: "suspended", operationId, deferred: outcome.deferred };
    }
    return { state: "pending", operationId };
  }
}
