import type { CompactionRequest, NavigationRequest, OperationRequest } from "../../harness/runtime/acceptance.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";
import { once, type ReceiptScope } from "../rpc/idempotency.ts";
import { parseWire, unwrapLane, asResult } from "../rpc/rpc-errors.ts";
import { fromWire, toWire, type Wire } from "../../schema/wire.ts";
import type { HandedReservation } from "./due-work/settlement-outbox.ts";
import type { ConvenienceOutcome } from "./session-operations.ts";
import { operationView } from "./session-runtime.ts";

import type { SessionHost } from "./session-host.ts";
import type { SessionOperations } from "./session-operations.ts";
import { StructuralContinuations } from "./structural-continuations.ts";

/** How long a continuation's waiter waits on its operation at a time (it looks again after). */
const CONTINUATION_WAIT_STEP_MS = 30_000;
/** The least time between two looks of a waiter. */
const CONTINUATION_RETRY_MS = 1_000;

/** What the navigate convenience answers: the navigation, and the continuation run when one started. */
export interface NavigateOutcome {
  navigation: ConvenienceOutcome<OperationResultRecord>;
  run?: ConvenienceOutcome<PromptAnswer>;
}

/** What the compact convenience answers: the compaction, and the continuation run when one started. */
export interface CompactOutcome {
  compaction: ConvenienceOutcome<OperationResultRecord>;
  run?: ConvenienceOutcome<PromptAnswer>;
}

/** What this module reaches of the host (session-host.ts). */
type StructuralHost = Pick<SessionHost, "ctx" | "env" | "heldSlots" | "keepReservation" | "lane" | "open" | "reservationBound" | "takeOverReservation">;

/**
 * Structural conveniences (reference §3.9): an operation A, then — when A was not aborted and the
 * lane holds eligible queued input (steer, follow-up, next-run) — the continuation run B, admitted
 * as an empty-prompt run that takes that input. The same primitives a client could call itself.
 */
export class SessionStructural {
  private readonly continuations: StructuralContinuations;

  constructor(
    private readonly host: StructuralHost,
    /** Waits on each operation as the prompt convenience does. */
    private readonly operations: SessionOperations,
  ) {
    this.continuations = new StructuralContinuations(host.ctx.storage);
  }

  /** `reservation`: the slot the worker reserved for the navigation (taken over as a prompt's is). */
  async navigateAndAwait(name: string, request: Wire<NavigationRequest>, waitMs: number, receipt?: ReceiptScope, reservation?: HandedReservation): Promise<Wire<RpcResult<NavigateOutcome>>> {
    return asResult(async () => {
      const { record, run } = await this.structuralThenContinue(name, parseWire(request), waitMs, receipt, reservation);
      return { navigation: record, ...(run && { run }) };
    });
  }

  /**
   * The navigation alone, with no continuation run: the queued input stays for the prompt the
   * caller sends next (the AI SDK's regenerate, worker/routes/ai-sdk.ts, whose new answer must be
   * the only one). The worker keeps the slot (no `reservation`) and releases it once settled.
   */
  async navigateAlone(name: string, request: Wire<NavigationRequest>, waitMs: number): Promise<Wire<RpcResult<NavigateOutcome>>> {
    return asResult(async () => {
      const { record } = await this.structuralThenContinue(name, parseWire(request), waitMs, undefined, undefined, false);
      return { navigation: record };
    });
  }

  /** `reservation`: the slot the worker reserved for the compaction (taken over as a prompt's is). */
  async compactAndAwait(name: string, request: Wire<CompactionRequest>, waitMs: number, receipt?: ReceiptScope, reservation?: HandedReservation): Promise<Wire<RpcResult<CompactOutcome>>> {
    return asResult(async () => {
      const { record, run } = await this.structuralThenContinue(name, parseWire(request), waitMs, receipt, reservation);
      return { compaction: record, ...(run && { run }) };
    });
  }

  /**
   * The structural operation on the worker's slot: the session releases it with the settlement, or
   * (answered before it settled) the worker binds it. Its continuation run is an operation of its
   * own and holds a slot as every run does (docs/api-tenants.md): the structural operation's,
   * taken off its settlement's release when that is still to be sent, else the lane's held slot,
   * else one reserved now. With the quota used up there is none: no continuation, and the input
   * stays queued for the lane's next prompt.
   */
  private async structuralThenContinue(
    name: string,
    request: NavigationRequest | CompactionRequest,
    waitMs: number,
    receipt: ReceiptScope | undefined,
    reservation: HandedReservation | undefined,
    /** False: the operation alone, owing no continuation run (`navigateAlone`). */
    continues = true,
  ): Promise<{ record: ConvenienceOutcome<OperationResultRecord>; run?: ConvenienceOutcome<PromptAnswer> }> {
    const lane = await this.host.lane(name);
    const started = Date.now();
    // Accepted once per claimed key (rpc/idempotency.ts); a repeat after a crash waits on that
    // operation. The continuation it owes is marked in the same turn.
    const admission = await once(this.host.ctx.storage.sql, receipt, async () => {
      const accepted = unwrapLane(await lane.accept(request));
      if (continues) this.continuations.want(name, accepted.operationId);
      return accepted;
    });
    const { operationId } = admission;
    if (reservation !== undefined) this.host.takeOverReservation(operationId, reservation);
    this.host.open().runtime.startPass(lane, operationId);
    const record = await this.operations.outcomeWithin(lane, operationId, waitMs);
    if (!continues) return { record };
    if (record.state !== "settled") {
      if (reservation !== undefined) this.host.reservationBound(operationId);
      // The continuation is still owed once the operation settles: a waiter in the object decides it.
      this.waitToContinue(name, operationId);
      return { record };
    }
    const remaining = (): number => Math.max(0, waitMs - (Date.now() - started));
    const run = await this.continueAfter(name, operationId, record.result, reservation, remaining);
    return run ? { record, run } : { record };
  }

  /**
   * The continuation run of a settled structural operation (reference §3.9): none when it was
   * aborted or no eligible input is queued. Its slot: the operation's own (`reservation`, when its
   * release is still to be sent), else the lane's held slot, else one reserved now; with the quota
   * used up there is none, and the input stays queued for the lane's next prompt. Decided once:
   * the mark is cleared whatever the decision.
   */
  private async continueAfter(
    name: string,
    operationId: string,
    result: OperationResultRecord,
    reservation: HandedReservation | undefined,
    remaining: () => number,
  ): Promise<ConvenienceOutcome<PromptAnswer> | undefined> {
    this.continuations.decided(name, operationId);
    if (result.status === "aborted") return undefined;
    const lane = await this.host.lane(name);
    // Empty-prompt acceptance is valid only when eligible non-write input is queued (§3.1).
    if (!lane.inspectExecution().queues.some((item) => item.kind !== "write")) return undefined;
    const continuation = toWire({ kind: "prompt" as const, prompt: "" });
    const answer =
      reservation !== undefined && this.host.keepReservation(operationId)
        ? await this.operations.acceptAndAwaitOnReservation(name, continuation, remaining(), reservation)
        : ((await this.operations.acceptAndAwaitOnHeldSlot(name, continuation, remaining())) ?? (await this.onReservedSlot(name, continuation, remaining)));
    if (answer === undefined) return undefined;
    // Refused (another caller took the lane first): no continuation, and its slot was given back.
    const run = fromWire(answer);
    return run.ok ? run.value : undefined;
  }

  /**
   * A new harness exists (a restarted object): every continuation owed before it, each decided by
   * a waiter once its operation settles. The marks are read now, in the harness's creation: one a
   * request writes later is that request's to decide. The waiters start once the creation is over.
   */
  harnessCreated(): void {
    const owed = this.continuations.owed();
    if (owed.length === 0) return;
    setTimeout(() => {
      for (const { lane, operationId } of owed) this.waitToContinue(lane, operationId);
    }, 0);
  }

  /**
   * Waits, off any request, for the operation to settle, then decides its continuation. A waiter
   * that loses its harness (a restart) leaves the mark: the next harness makes a waiter again.
   */
  private waitToContinue(name: string, operationId: string): void {
    const waiting = (async () => {
      for (;;) {
        const lane = await this.host.lane(name);
        const asked = Date.now();
        const outcome = await this.operations.outcomeWithin(lane, operationId, CONTINUATION_WAIT_STEP_MS);
        if (outcome.state === "settled") {
          await this.continueAfter(name, operationId, outcome.result, undefined, () => 0);
          return;
        }
        // An operation the lane does not know (an id never accepted there) owes nothing.
        if (operationView(lane, operationId) === undefined) return this.continuations.decided(name, operationId);
        // A drive that answered at once (its harness closing, say) is not asked again in a hot loop.
        if (Date.now() - asked < CONTINUATION_RETRY_MS) await new Promise((resolve) => setTimeout(resolve, CONTINUATION_RETRY_MS));
      }
    })();
    this.host.ctx.waitUntil(waiting.catch(() => undefined));
  }

  /** The continuation on a slot reserved at the tenant now; undefined when the quota is used up. */
  private async onReservedSlot(name: string, request: Wire<OperationRequest>, remaining: () => number): Promise<Wire<RpcResult<ConvenienceOutcome<PromptAnswer>>> | undefined> {
    const { storage } = this.host.open();
    const reserved = await this.host.env.TENANTS.getByName(storage.tenantId).reserveOperation(storage.metadata.id, name);
    if (!reserved.ok) return undefined;
    return this.operations.acceptAndAwaitOnReservation(name, request, remaining(), { reservationId: reserved.reservationId, webhooks: reserved.webhooks });
  }
}
