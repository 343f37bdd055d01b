// What the workload was told by the service (the client's side of every invariant): each
// operation a 2xx answer accepted, each queued input with its unique marker text, what aborts
// handed back, and each client tool answer the client posted. The checker compares this with what
// the service shows at the end.

export interface AcceptedOperation {
  sessionId: string;
  lane: string;
  operationId: string;
  /** The unique marker of the prompt (runs only). */
  marker?: string;
  how: string;
}

export type MarkerKind = "steer" | "followUp" | "nextRun" | "ifBusy:steer" | "ifBusy:followUp" | "socket:queue";

export interface QueuedMarker {
  sessionId: string;
  lane: string;
  marker: string;
  kind: MarkerKind;
  entryId?: string;
  /** When the workload first sent it (ms since the epoch): an abort that ended later may have drained it. */
  sentAt: number;
}

/** A client tool call the soak's client answered (test/soak/client-tools.ts). */
export interface ClientAnswer {
  sessionId: string;
  lane: string;
  operationId: string;
  toolCallId: string;
  /** The marker in the answer's text (the same on every post of this answer). */
  marker: string;
  /** 202 when a post of it was accepted; otherwise the status of its last post. */
  status: number;
}

export class Ledger {
  readonly operations: AcceptedOperation[] = [];
  readonly queued: QueuedMarker[] = [];
  /** Marker texts handed back by an abort (its answer, or an `operation_abort` event a follower saw). */
  readonly handedBack = new Set<string>();
  /**
   * Operations whose abort the client saw drain the queue (an answer with `newlyRequested: true`,
   * or the `operation_abort` event): for any other aborted operation, what its abort drained is
   * unknown to the client (docs/api-lanes.md: the drained input is only in the answer and the event).
   */
  readonly drainSeen = new Set<string>();
  readonly clientAnswers = new Map<string, ClientAnswer>();
  /** Deferred runs left to the minute cron: the soak never grants them a poll by hand. */
  readonly cronOnly = new Set<string>();
  /** Deferred runs the soak saw suspended, by operation id (for the summary's count of cron resumptions). */
  readonly suspended = new Set<string>();
  /** Sessions forked from the soak's sessions (their entries are checked too). */
  readonly forks: string[] = [];
  /** What the workload did, by kind (for the summary). */
  readonly counts = new Map<string, number>();
  private serial = 0;

  /** A marker no other text contains: `<mk:{actor}:{n}>`. */
  marker(actor: string): string {
    this.serial++;
    return `<mk:${actor}:${this.serial}>`;
  }

  count(what: string): void {
    this.counts.set(what, (this.counts.get(what) ?? 0) + 1);
  }

  accept(operation: AcceptedOperation): void {
    if (!this.operations.some((known) => known.sessionId === operation.sessionId && known.operationId === operation.operationId)) this.operations.push(operation);
    this.count(`accepted ${operation.how}`);
  }

  enqueue(item: QueuedMarker): void {
    this.queued.push(item);
    this.count(`queued ${item.kind}`);
  }

  /** What an abort handed back (its answer or its event) for `operationId`. */
  handBack(operationId: string, messages: readonly unknown[]): void {
    this.drainSeen.add(operationId);
    for (const message of messages) {
      const text = JSON.stringify(message);
      for (const match of text.matchAll(/<mk:[^>]+>/g)) this.handedBack.add(match[0]);
    }
  }
}
