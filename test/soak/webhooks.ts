import type { ReceivedDelivery } from "../node/webhook-receiver-setup.ts";
import { sleep } from "./cluster.ts";
import type { Violation } from "./invariants.ts";
import type { AcceptedOperation } from "./ledger.ts";

// Webhooks under chaos (docs/webhooks.md): the tenant's `operation.settled` endpoint is a local
// receiver; every settled operation must reach it at least once, and every delivery of one
// operation's event carries the same event id (retries after a kill are the same event).

/** How long the check waits for deliveries: a failed attempt is retried 30 s later, then 60 s. */
const DELIVERY_BOUND_MS = 150_000;

type Delivery = { id: string; type: string; data: { operationId?: string } };

export interface WebhookTally {
  deliveries: number;
  events: number;
  /** Events delivered more than once (at-least-once at work). */
  redelivered: number;
}

/** Waits (bounded) until every operation in `operations` has a delivery; reports what is missing or unstable. */
export async function checkWebhooks(read: () => Promise<ReceivedDelivery[]>, operations: readonly AcceptedOperation[], violations: Violation[]): Promise<WebhookTally> {
  const deadline = Date.now() + DELIVERY_BOUND_MS;
  let byOperation = new Map<string, Set<string>>();
  let deliveries: Delivery[] = [];
  for (;;) {
    deliveries = (await read()).map((received) => JSON.parse(received.rawBody));
    byOperation = new Map();
    for (const delivery of deliveries) {
      if (delivery.type !== "operation.settled" || delivery.data.operationId === undefined) continue;
      const ids = byOperation.get(delivery.data.operationId) ?? new Set<string>();
      ids.add(delivery.id);
      byOperation.set(delivery.data.operationId, ids);
    }
    if (operations.every((operation) => byOperation.has(operation.operationId)) || Date.now() > deadline) break;
    await sleep(2000);
  }
  for (const operation of operations) {
    const ids = byOperation.get(operation.operationId);
    const where = `${operation.how} ${operation.operationId} on ${operation.sessionId}/${operation.lane}`;
    if (!ids) violations.push({ invariant: "a webhook arrives at least once per settled operation", detail: `${where}: no operation.settled delivery within ${DELIVERY_BOUND_MS} ms` });
    else if (ids.size > 1) violations.push({ invariant: "a webhook event keeps its id across deliveries", detail: `${where}: event ids ${[...ids].join(", ")}` });
  }
  const perEvent = new Map<string, number>();
  for (const delivery of deliveries) perEvent.set(delivery.id, (perEvent.get(delivery.id) ?? 0) + 1);
  return { deliveries: deliveries.length, events: perEvent.size, redelivered: [...perEvent.values()].filter((count) => count > 1).length };
}
