import { WATCH_MESSAGE_BURST, WATCH_MESSAGES_PER_SECOND } from "../schema/watch.ts";

// The client side of the server's message rate (docs/api-watch.md "Limits"): a socket takes a
// burst of WATCH_MESSAGE_BURST client messages, then WATCH_MESSAGES_PER_SECOND, and is closed
// 1008 past that, which ends the watch. The pacer keeps a bucket of its own, with a margin under
// the server's (the network may bunch messages sent apart), and holds back what would exceed it:
// a burst of commands is sent in time instead of costing the socket.

/** The pacer's bucket: a fifth under the server's, so messages bunched in transit still fit. */
export const PACED_BURST = Math.floor(WATCH_MESSAGE_BURST * 0.8);
export const PACED_PER_SECOND = WATCH_MESSAGES_PER_SECOND * 0.8;

export class MessagePacer {
  private tokens = PACED_BURST;
  private refilledAt: number;
  private readonly held: string[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly deliver: (text: string) => void;
  private readonly now: () => number;

  // Fields assigned in the body: the SDK runs under type stripping, which has no parameter properties.
  constructor(deliver: (text: string) => void, now: () => number = Date.now) {
    this.deliver = deliver;
    this.now = now;
    this.refilledAt = now();
  }

  /** Messages held back, waiting for the bucket. */
  get backlog(): number {
    return this.held.length;
  }

  /** Sends `text` now if the bucket allows and nothing waits before it, else in its turn. */
  send(text: string): void {
    this.held.push(text);
    this.flush();
  }

  /** The socket is gone: what is held is dropped (commands are sent again on the next socket). */
  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.held.length = 0;
  }

  private flush(): void {
    this.refill();
    while (this.held.length > 0 && this.tokens >= 1) {
      this.tokens -= 1;
      const text = this.held.shift();
      if (text !== undefined) this.deliver(text);
    }
    if (this.held.length > 0 && this.timer === undefined) {
      const waitMs = Math.ceil(((1 - this.tokens) / PACED_PER_SECOND) * 1000);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush();
      }, waitMs);
    }
  }

  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(PACED_BURST, this.tokens + ((now - this.refilledAt) / 1000) * PACED_PER_SECOND);
    this.refilledAt = now;
  }
}
