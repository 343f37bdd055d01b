import { SessionClosed } from "./errors.ts";

/**
 * The one FIFO line of a session (ARCHITECTURE D4, reference §2.1). Each holder runs alone until it
 * releases; waiters start in arrival order. Ordinary mutations hold it for one synchronous callback;
 * an explicit `beginMutation()` scope may hold it across awaits until `end()`.
 */
export class MutationLine {
  private tail: Promise<void> = Promise.resolve();
  private held = 0;
  private sealedError: Error | undefined;
  private drained: (() => void) | undefined;

  /** Waits for the line; resolves with a release function that must be called exactly once. */
  acquire(): Promise<() => void> {
    if (this.sealedError) return Promise.reject(this.sealedError);
    const previous = this.tail;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.tail = previous.then(() => released);
    this.held++;
    let done = false;
    const releaseOnce = () => {
      if (done) return;
      done = true;
      this.held--;
      release();
      if (this.held === 0) this.drained?.();
    };
    return previous.then(() => releaseOnce);
  }

  /** Runs `operation` while holding the line and releases it however the operation ends. */
  async run<T>(operation: () => T | Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await operation();
    } finally {
      release();
    }
  }

  get sealed(): boolean {
    return this.sealedError !== undefined;
  }

  /**
   * Admits nothing new; holders and waiters admitted before the seal still run (D14.4).
   * Resolves when every admitted holder has released.
   */
  seal(error: Error = new SessionClosed()): Promise<void> {
    this.sealedError ??= error;
    if (this.held === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const previous = this.drained;
      this.drained = () => {
        previous?.();
        resolve();
      };
    });
  }
}
