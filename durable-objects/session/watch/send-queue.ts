/**
 * Sockets one turn of a flush sends to (a lane's audience above it goes out over several turns).
 * Measured with 500 watchers of one lane (bench P7, P14, paired runs): 25 a turn took the first SSE
 * stream from ~45 ms to under 10 ms and halved the median; 50 and 100 a turn did a little worse at
 * p95, 10 a turn no better.
 */
export const SEND_SLICE = 25;

/** One flush's events for one audience: its sockets, the next one to send to, how to send. */
interface Delivery<T> {
  targets: T[];
  next: number;
  send: (target: T) => void;
}

/**
 * The flushed deliveries of a WatchHub still going out, in flush order, `slice` targets a turn:
 * between turns (a zero-delay timer) the object's other work runs, so a flush to 500 sockets never
 * holds the object, or, in one local process, the front worker relaying SSE streams, for its whole
 * length. A target's sends keep their order, since deliveries go out in the order they were queued.
 */
export class SendQueue<T> {
  private readonly deliveries: Delivery<T>[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly slice: number = SEND_SLICE) {}

  /** Queues one delivery to `targets` (the audience as it is now). */
  push(targets: Iterable<T>, send: (target: T) => void): void {
    this.deliveries.push({ targets: [...targets], next: 0, send });
  }

  /** Sends up to `budget` of what is queued; what is left goes on in later turns, a slice each. */
  run(budget: number = this.slice): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    let left = budget;
    for (let delivery = this.deliveries[0]; delivery; delivery = this.deliveries[0]) {
      while (delivery.next < delivery.targets.length) {
        if (left-- <= 0) {
          this.timer = setTimeout(() => this.run(), 0);
          return;
        }
        const target = delivery.targets[delivery.next++];
        if (target !== undefined) delivery.send(target);
      }
      // A send that finished the queue itself (a snapshot sent from within it) has moved the head on.
      if (this.deliveries[0] === delivery) this.deliveries.shift();
    }
  }

  /** Everything queued goes out now. */
  finish(): void {
    if (this.deliveries.length > 0) this.run(Number.POSITIVE_INFINITY);
  }
}
