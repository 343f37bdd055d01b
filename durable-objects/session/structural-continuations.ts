/** KV keys of the structural conveniences still owing their continuation decision: `<prefix><lane>/<operationId>`. */
const PREFIX = "structural.continue/";

/**
 * The compactions and navigations a convenience (`POST …/compact`, `POST …/navigate`) accepted
 * whose continuation run (reference §3.9: once the operation settles unaborted, a run takes the
 * lane's queued input) is not decided yet. The request that accepted one decides it when its wait
 * sees the settlement; past its wait, a waiter in the object does; after a restart, the waiters
 * are made again from these marks (session-structural.ts). So queued input is answered once the
 * operation settles, whoever waits, also across a crash. A mark is a few bytes of KV, written in
 * the acceptance's turn and deleted with the decision.
 */
export class StructuralContinuations {
  constructor(private readonly storage: DurableObjectStorage) {}

  want(lane: string, operationId: string): void {
    this.storage.kv.put(keyOf(lane, operationId), 1);
  }

  decided(lane: string, operationId: string): void {
    this.storage.kv.delete(keyOf(lane, operationId));
  }

  /** Every mark, read whole before any await (a cursor must not outlive its turn). */
  owed(): { lane: string; operationId: string }[] {
    const owed: { lane: string; operationId: string }[] = [];
    for (const [key] of this.storage.kv.list({ prefix: PREFIX })) {
      const rest = key.slice(PREFIX.length);
      const slash = rest.lastIndexOf("/");
      if (slash > 0) owed.push({ lane: rest.slice(0, slash), operationId: rest.slice(slash + 1) });
    }
    return owed;
  }
}

function keyOf(lane: string, operationId: string): string {
  return `${PREFIX}${lane}/${operationId}`;
}
