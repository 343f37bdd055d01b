// What the workload was told by the service (the client's side of every invariant): each
// operation a 2xx answer accepted, each queued input with its unique marker text, and what aborts
// handed back. The checker compares this with what the service shows at the end.

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
}

export class Ledger {
  readonly operations: AcceptedOperation[] = [];
  readonly queued: QueuedMarker[] = [];
  /** Marker texts handed back by an abort (its answer, or an `operation_abort` event a follower saw). */
  readonly handedBack = new Set<string>();
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

  handBack(messages: readonly unknown[]): void {
    for (const message of messages) {
      const text = JSON.stringify(message);
      for (const match of text.matchAll(/<mk:[^>]+>/g)) this.handedBack.add(match[0]);
    }
  }
}
