import { sleep } from "./cluster.ts";
import type { FlakyDelivery } from "./flaky-receiver.ts";
import type { Violation } from "./invariants.ts";
import type { AcceptedOperation } from "./ledger.ts";

// Webhooks under chaos (docs/webhooks.md): the tenant's `operation.settled` endpoint is the soak's
// flaky receiver (flaky-receiver.ts), which refuses or times out a seeded share of first attempts.
// Every settled operation's event must arrive (an attempt the receiver accepted), however many
// attempts it took and whatever kills fell between them, and every attempt for one operation
// carries the same event id (retries after a refusal or a kill are the same event).

/**
 * How long the check waits for deliveries once every operation has settled: a refused attempt is
 * retried 30 s later, then 60 s after that.
 */
const DELIVERY_BOUND_MS = 150_000;

type Delivery = { id: string; type: string; data: { operationId?: string } };

export interface WebhookTally {
  attempts: number;
  events: number;
  /** Attempts the receiver refused (503) or left unanswered past the service's timeout. */
  refused: number;
  /** Events that arrived after at least one refused attempt (redelivery at work). */
  redelivered: number;
  /** Events delivered (accepted by the receiver) more than once: at-least-once, e.g. after a kill. */
  duplicates: number;
}

/**
 * Waits until every operation in `operations` has an accepted delivery (bounded: DELIVERY_BOUND_MS
 * after `settled`, the checks that wait for every operation to settle, which it runs alongside);
 * reports what is missing or unstable.
 */
export async function checkWebhooks(read: () => FlakyDelivery[], operations: readonly AcceptedOperation[], violations: Violation[], settled: Promise<unknown>): Promise<WebhookTally> {
  let settledAt: number | undefined;
  const mark = () => (settledAt = Date.now());
  settled.then(mark, mark);
  let attempts: (FlakyDelivery & { body: Delivery })[] = [];
  const arrived = () => new Set(attempts.flatMap((attempt) => (attempt.answer === 204 && attempt.body.data.operationId !== undefined ? [attempt.body.data.operationId] : [])));
  for (;;) {
    attempts = read().map((delivery) => ({ ...delivery, body: JSON.parse(delivery.rawBody) as Delivery }));
    const done = arrived();
    if (operations.every((operation) => done.has(operation.operationId))) break;
    if (settledAt !== undefined && Date.now() > settledAt + DELIVERY_BOUND_MS) break;
    await sleep(2000);
  }
  const done = arrived();
  const idsByOperation = new Map<string, Set<string>>();
  for (const attempt of attempts) {
    if (attempt.body.type !== "operation.settled" || attempt.body.data.operationId === undefined) continue;
    const ids = idsByOperation.get(attempt.body.data.operationId) ?? new Set<string>();
    ids.add(attempt.body.id);
    if (attempt.eventId !== attempt.body.id) ids.add(`Webhook-Id ${attempt.eventId}`);
    idsByOperation.set(attempt.body.data.operationId, ids);
  }
  for (const operation of operations) {
    const ids = idsByOperation.get(operation.operationId);
    const where = `${operation.how} ${operation.operationId} on ${operation.sessionId}/${operation.lane}`;
    if (!done.has(operation.operationId)) violations.push({ invariant: "a webhook arrives at least once per settled operation", detail: `${where}: no accepted operation.settled delivery within ${DELIVERY_BOUND_MS} ms (${ids?.size ?? 0} event ids attempted)` });
    if (ids && ids.size > 1) violations.push({ invariant: "a webhook event keeps its id across deliveries", detail: `${where}: event ids ${[...ids].join(", ")}` });
  }
  const byEvent = new Map<string, FlakyDelivery[]>();
  for (const attempt of attempts) byEvent.set(attempt.body.id, [...(byEvent.get(attempt.body.id) ?? []), attempt]);
  const events = [...byEvent.values()];
  return {
    attempts: attempts.length,
    events: byEvent.size,
    refused: attempts.filter((attempt) => attempt.answer !== 204).length,
    redelivered: events.filter((tries) => tries.some((attempt) => attempt.answer !== 204) && tries.some((attempt) => attempt.answer === 204)).length,
    duplicates: events.filter((tries) => tries.filter((attempt) => attempt.answer === 204).length > 1).length,
  };
}
