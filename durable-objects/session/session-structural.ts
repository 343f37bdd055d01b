import type { CompactionRequest, NavigationRequest } from "../../harness/runtime/acceptance.ts";
import type { RpcResult } from "../../schema/errors.ts";
import type { PromptAnswer } from "../../schema/lane-answers.ts";
import type { OperationResultRecord } from "../../schema/lane.ts";
import { once, type ReceiptScope } from "../rpc/idempotency.ts";
import { parseWire, unwrapLane, asResult } from "../rpc/rpc-errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { appendedMessages, placedBy } from "./appended-messages.ts";
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
type StructuralHost = Pick<SessionHost, "ctx" | "lane" | "open" | "openStorage">;

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

  async navigateAndAwait(name: string, request: Wire<NavigationRequest>, waitMs: number, receipt?: ReceiptScope): Promise<Wire<RpcResult<NavigateOutcome>>> {
    return asResult(async () => {
      const { record, run } = await this.structuralThenContinue(name, parseWire(request), waitMs, receipt);
      return { navigation: record, ...(run && { run }) };
    });
  }

  async compactAndAwait(name: string, request: Wire<CompactionRequest>, waitMs: number, receipt?: ReceiptScope): Promise<Wire<RpcResult<CompactOutcome>>> {
    return asResult(async () => {
      const { record, run } = await this.structuralThenContinue(name, parseWire(request), waitMs, receipt);
      return { compaction: record, ...(run && { run }) };
    });
  }

  private async structuralThenContinue(
    name: string,
    request: NavigationRequest | CompactionRequest,
    waitMs: number,
    receipt: ReceiptScope | undefined,
  ): Promise<{ record: ConvenienceOutcome<OperationResultRecord>; run?: ConvenienceOutcome<PromptAnswer> }> {
    const lane = await this.host.lane(name);
    const started = Date.now();
    // Accepted once per claimed key (rpc/idempotency.ts); a repeat after a crash waits on that operation.
    const admission = await once(this.host.ctx.storage.sql, receipt, async () => unwrapLane(await lane.accept(request)));
    this.host.open().runtime.startPass(lane, admission.operationId);
    const record = await this.operations.outcomeWithin(lane, admission.operationId, waitMs);
    if (record.state !== "settled" || record.result.status === "aborted") return { record };
    // Empty-prompt acceptance is valid only when eligible non-write input is queued (§3.1);
    // otherwise (or when another caller took the lane first) there is no continuation.
    const continuation = await lane.accept({ kind: "prompt", prompt: "" });
    if (!continuation.ok) return { record };
    this.host.open().runtime.startPass(lane, continuation.value.operationId);
    const run = await this.operations.outcomeWithin(lane, continuation.value.operationId, Math.max(0, waitMs - (Date.now() - started)));
    if (run.state !== "settled") return { record, run };
    return { record, run: { state: "settled", result: { ...run.result, ...appendedMessages(this.host.openStorage(), run.result, placedBy(lane, run.result)) } } };
  }
}
