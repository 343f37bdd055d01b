import type { CompactionRequest, NavigationRequest, OperationRequest } from "../../harness/runtime/acceptance.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";
import { once, type ReceiptScope } from "../rpc/idempotency.ts";
import { parseWire, unwrapLane, asResult } from "../rpc/rpc-errors.ts";
import { fromWire, toWire, type Wire } from "../../schema/wire.ts";
import type { HandedReservation } from "./due-work/settlement-outbox.ts";
import type { ConvenienceOutcome } from "./session-operations.ts";

import type { SessionHost } from "./session-host.ts";
import type { SessionOperations } from "./session-operations.ts";
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
  constructor(
    private readonly host: StructuralHost,
    /** Waits on each operation as the prompt convenience does. */
    private readonly operations: SessionOperations,
  ) {}

  /** `reservation`: the slot the worker reserved for the navigation (taken over as a prompt's is). */
  async navigateAndAwait(name: string, request: Wire<NavigationRequest>, waitMs: number, receipt?: ReceiptScope, reservation?: HandedReservation): Promise<Wire<RpcResult<NavigateOutcome>>> {
    return asResult(async () => {
      const { record, run } = await this.structuralThenContinue(name, parseWire(request), waitMs, receipt, reservation);
      return { navigation: record, ...(run && { run }) };
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
  ): Promise<{ record: ConvenienceOutcome<OperationResultRecord>; run?: ConvenienceOutcome<PromptAnswer> }> {
    const lane = await this.host.lane(name);
    const started = Date.now();
    // Accepted once per claimed key (rpc/idempotency.ts); a repeat after a crash waits on that operation.
    const admission = await once(this.host.ctx.storage.sql, receipt, async () => unwrapLane(await lane.accept(request)));
    const { operationId } = admission;
    if (reservation !== undefined) this.host.takeOverReservation(operationId, reservation);
    this.host.open().runtime.startPass(lane, operationId);
    const record = await this.operations.outcomeWithin(lane, operationId, waitMs);
    if (record.state !== "settled") {
      if (reservation !== undefined) this.host.reservationBound(operationId);
      return { record };
    }
    if (record.result.status === "aborted") return { record };
    // Empty-prompt acceptance is valid only when eligible non-write input is queued (§3.1).
    if (!lane.inspectExecution().queues.some((item) => item.kind !== "write")) return { record };
    const continuation = toWire({ kind: "prompt" as const, prompt: "" });
    const remaining = (): number => Math.max(0, waitMs - (Date.now() - started));
    const answer =
      reservation !== undefined && this.host.keepReservation(operationId)
        ? await this.operations.acceptAndAwaitOnReservation(name, continuation, remaining(), reservation)
        : ((await this.operations.acceptAndAwaitOnHeldSlot(name, continuation, remaining())) ?? (await this.onReservedSlot(name, continuation, remaining)));
    if (answer === undefined) return { record };
    // Refused (another caller took the lane first): no continuation, and its slot was given back.
    const run = fromWire(answer);
    return run.ok ? { record, run: run.value } : { record };
  }

  /** The continuation on a slot reserved at the tenant now; undefined when the quota is used up. */
  private async onReservedSlot(name: string, request: Wire<OperationRequest>, remaining: () => number): Promise<Wire<RpcResult<ConvenienceOutcome<PromptAnswer>>> | undefined> {
    const { storage } = this.host.open();
    const reserved = await this.host.env.TENANTS.getByName(storage.tenantId).reserveOperation(storage.metadata.id, name);
    if (!reserved.ok) return undefined;
    return this.operations.acceptAndAwaitOnReservation(name, request, remaining(), { reservationId: reserved.reservationId, webhooks: reserved.webhooks });
  }
}
