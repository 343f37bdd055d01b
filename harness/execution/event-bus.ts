import type { HarnessEvent, HarnessEventType } from "../../schema/lane.ts";
import { errorMessage } from "./errors.ts";

// Passive post-commit events (reference §5.2, ARCHITECTURE D13). The ordering contract:
// - `emitBatch` binds its recipients synchronously, at the call, which happens inside the committing
//   mutation callback: listeners added later do not receive the batch, listeners removed later still do;
// - every batch joins one global delivery tail, so batches are delivered whole, one after another, in
//   emit (= mutation) order, and never synchronously inside the emitting callback;
// - the public operation awaits its batch's promise; the mutation never does;
// - each recipient receives its own structured clone of each event;
// - a failing listener produces `handler_error{kind:"event"}` for the batch's other recipients; nothing
//   is rethrown and nothing rolls back.

export type EventOf<T extends HarnessEventType | "*"> = T extends HarnessEventType
  ? Extract<HarnessEvent, { type: T }>
  : HarnessEvent;
export type EventListener<E extends HarnessEvent = HarnessEvent> = (event: E) => void | Promise<void>;

interface Subscription {
  readonly type: HarnessEventType | "*";
  readonly deliver: (event: HarnessEvent) => void | Promise<void>;
}

function isEventOf<T extends HarnessEventType | "*">(event: HarnessEvent, type: T): event is EventOf<T> {
  return type === "*" || event.type === type;
}

export class EventBus {
  private subscriptions: Subscription[] = [];
  private tail: Promise<void> = Promise.resolve();
  private closed = false;

  /** Subscribes to one event type, or to every event with `"*"`. Returns the unsubscribe function. */
  on<T extends HarnessEventType | "*">(type: T, listener: EventListener<EventOf<T>>): () => void {
    const subscription: Subscription = {
      type,
      deliver: (event) => (isEventOf(event, type) ? listener(event) : undefined),
    };
    // Copy-on-write: a batch holds the array it bound, so later (un)subscriptions never reach it.
    this.subscriptions = [...this.subscriptions, subscription];
    return () => {
      this.subscriptions = this.subscriptions.filter((candidate) => candidate !== subscription);
    };
  }

  /**
   * Binds the current recipients now and queues the batch behind every earlier one. The promise
   * resolves once this batch has been delivered to all its recipients; it never rejects. After
   * `close()` this is a no-op that resolves immediately.
   */
  emitBatch(events: readonly HarnessEvent[]): Promise<void> {
    if (this.closed) return Promise.resolve();
    const recipients = this.subscriptions;
    const batch = [...events];
    const delivered = this.tail.then(() => deliverBatch(batch, recipients));
    this.tail = delivered;
    return delivered;
  }

  /** Refuses new batches; resolves once every batch bound before the close has been delivered. */
  close(): Promise<void> {
    this.closed = true;
    return this.tail;
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

async function deliverBatch(events: HarnessEvent[], recipients: readonly Subscription[]): Promise<void> {
  for (const event of events) {
    const failures: { from: Subscription; error: unknown }[] = [];
    for (const recipient of recipients) {
      const error = await deliverOne(recipient, event);
      if (error !== undefined) failures.push({ from: recipient, error: error.cause });
    }
    // Failures of one event are reported to the batch's other recipients before the next event.
    for (const failure of failures) {
      const report = handlerError(event, failure.error);
      for (const recipient of recipients) {
        // A failure while reporting a failure is dropped: reporting must not loop.
        if (recipient !== failure.from) await deliverOne(recipient, report);
      }
    }
  }
}

/** Delivers one clone to one recipient; returns the failure (boxed, so `undefined` throws still count). */
async function deliverOne(recipient: Subscription, event: HarnessEvent): Promise<{ cause: unknown } | undefined> {
  if (recipient.type !== "*" && recipient.type !== event.type) return undefined;
  try {
    await recipient.deliver(structuredClone(event));
    return undefined;
  } catch (cause) {
    return { cause };
  }
}

function handlerError(event: HarnessEvent, error: unknown): HarnessEvent {
  const lane = "lane" in event && typeof event.lane === "string" ? event.lane : undefined;
  return lane === undefined
    ? { type: "handler_error", kind: "event", error: errorMessage(error) }
    : { type: "handler_error", kind: "event", error: errorMessage(error), lane };
}
