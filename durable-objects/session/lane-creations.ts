/**
 * One creator per lane name within the object (ARCHITECTURE D4: never check, await, then write).
 * `PUT …/lanes/{lane}` awaits the tenant's configuration before it creates, so two requests for a
 * new lane can both be past that await. Whether the lane exists is therefore decided after it, in
 * the same synchronous turn that registers the creation here; a request that finds a creation in
 * flight waits for it and then answers the lane as created (200), having written nothing. A
 * creation that fails hands the name back: the next waiter decides again.
 */
export class LaneCreations<Lane> {
  private readonly inFlight = new Map<string, Promise<Lane>>();

  /**
   * The lane `existing()` finds, with `created: false`; else the one `create` makes as the only
   * creation of `name`. `existing` and the decision to create run in one synchronous turn.
   */
  async acquire(name: string, existing: () => Lane | undefined, create: () => Promise<Lane>): Promise<{ lane: Lane; created: boolean }> {
    for (;;) {
      const pending = this.inFlight.get(name);
      if (pending) {
        await pending.catch(() => undefined);
        continue;
      }
      const found = existing();
      if (found !== undefined) return { lane: found, created: false };
      const creation = create();
      this.inFlight.set(name, creation);
      try {
        return { lane: await creation, created: true };
      } finally {
        this.inFlight.delete(name);
      }
    }
  }
}
