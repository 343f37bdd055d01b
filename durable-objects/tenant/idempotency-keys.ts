import { IdempotencyStore, type IdempotencyClaim, type IdempotencyReplay } from "../rpc/idempotency.ts";
import type { LazySchema } from "../sql/lazy-schema.ts";

/** The Idempotency-Keys of the creating POSTs this object owns (rpc/idempotency.ts). */
export class IdempotencyKeys {
  constructor(
    private readonly schema: LazySchema,
    private readonly sql: SqlStorage,
  ) {}

  /**
   * D15: claim an Idempotency-Key (scoped by the caller to its route) for a creating POST this
   * object owns. Only admin and authenticated traffic gets here, so the claim may create storage.
   */
  async idempotencyClaim(key: string, requestHash: string): Promise<IdempotencyClaim> {
    this.schema.create();
    return new IdempotencyStore(this.sql).claim(key, requestHash);
  }

  async idempotencyComplete(key: string, requestHash: string, replay: IdempotencyReplay | null): Promise<void> {
    if (this.schema.exists) new IdempotencyStore(this.sql).complete(key, requestHash, replay);
  }
}
