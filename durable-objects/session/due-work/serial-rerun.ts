/**
 * One run of an idempotent job at a time: a kick while it runs makes it go round once more, so a
 * kick never misses what was added meanwhile and never runs two copies at once (the forwards that
 * move a session's outbox rows out after their commits).
 */
export class SerialRerun {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly job: () => Promise<void>) {}

  /** Starts the job, or joins the running one (which then runs once more). */
  kick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      await this.job();
    } while (this.again);
  }
}
