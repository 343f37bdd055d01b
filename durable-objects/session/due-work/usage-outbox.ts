import type { Usage } from "../../../schema/usage.ts";
import type { SqlSessionStorage } from "../storage/sql-session-storage.ts";

/**
 * Usage-ledger rows as a session tells them to its tenant: `epoch` names the session's
 * incarnation (its `createdAt`: a session id deleted and created again starts a new ledger), and
 * the rows come in seq order.
 */
export interface ForwardedUsage {
  epoch: number;
  rows: { seq: number; usage: Usage }[];
}

/** What the forward reads: the rows to tell, and whether a failed forward left the alarm armed for them. */
export interface PendingUsage extends ForwardedUsage {
  retrying: boolean;
}

type ForwardState = { forwarded_seq: number; retry_at: number | null };

/** Ledger rows an acknowledged mark may run ahead of the stored one: fewer than one forward's batch. */
export const STORED_MARK_LAG = 50;

/**
 * The session's usage outbox (issue 30 item 6c: the tenant's totals are exact). The ledger itself
 * is the outbox: every row past the seq the tenant acknowledged is told again by the next forward
 * (the settlement forward, a forward kicked by the row's own commit, the alarm), so a forward that
 * fails or dies with the object loses nothing, and the tenant applies each row once by its
 * per-session high-water mark (tenant/session-usage-marks.ts). Like the settlement outbox, the
 * acknowledged mark is stored with the session's next commit or alarm, not in a commit of its own,
 * and only once it is a batch ahead or a retry is armed (`persistAcknowledged`); an eviction
 * before that costs a repeated forward, applied once. Every method is one synchronous
 * SQL turn.
 */
export class UsageOutbox {
  /**
   * Acknowledged by the tenant and not yet stored, for the session created at `epoch`: up to `seq`,
   * `rows` ledger rows past the stored mark.
   */
  private acknowledged: { epoch: number; seq: number; rows: number } | undefined;

  constructor(
    private readonly sql: SqlStorage,
    private readonly clock: () => number,
  ) {}

  /** Up to `limit` rows of `storage`'s ledger the tenant has not acknowledged, oldest first. */
  pending(storage: SqlSessionStorage, limit: number): PendingUsage {
    const epoch = storage.metadata.createdAt;
    const state = this.state();
    const from = Math.max(state.forwarded_seq, this.acknowledged?.epoch === epoch ? this.acknowledged.seq : 0);
    const rows = storage.scanUsage({ fromSeq: from + 1, limit }).map(({ seq, usage }) => ({ seq, usage }));
    return { epoch, rows, retrying: state.retry_at !== null };
  }

  /** The tenant applied `usage` (or, for an empty batch, nothing was left to tell it). */
  acknowledge(usage: ForwardedUsage): void {
    const previous = this.acknowledged?.epoch === usage.epoch ? this.acknowledged : { seq: 0, rows: 0 };
    const fresh = usage.rows.filter((row) => row.seq > previous.seq).length;
    this.acknowledged = { epoch: usage.epoch, seq: Math.max(previous.seq, usage.rows.at(-1)?.seq ?? 0), rows: previous.rows + fresh };
  }

  /**
   * Stores the acknowledged mark; synchronous, so inside a mutation it joins its commit. The retry
   * is disarmed only when the mark covers the whole ledger: the acknowledgment stored may be an
   * earlier forward's, and a later one that failed still needs the alarm for its newer rows.
   *
   * Only when it matters: while no retry is armed and fewer than a batch of ledger rows
   * (STORED_MARK_LAG) were acknowledged since the stored mark, it stays in memory. Storing it
   * every turn was a row written per turn (QUALITY P12) for nothing a restart needs: a restarted
   * object tells those rows again, in one call, and the tenant applies each row once by its own
   * mark (tenant/session-usage-marks.ts).
   */
  persistAcknowledged(): void {
    const acknowledged = this.acknowledged;
    if (!acknowledged) return;
    const state = this.state();
    if (state.retry_at === null && acknowledged.rows < STORED_MARK_LAG) return;
    this.acknowledged = undefined;
    this.sql.exec(
      `UPDATE usage_forward SET forwarded_seq = max(forwarded_seq, ?1),
         retry_at = CASE WHEN max(forwarded_seq, ?1) >= (SELECT coalesce(max(seq), 0) FROM usage) THEN NULL ELSE retry_at END
       WHERE singleton = 1`,
      acknowledged.seq,
    );
  }

  /** A forward of pending rows failed: the alarm tells them again after `delayMs`. */
  postpone(delayMs: number): void {
    this.sql.exec("UPDATE usage_forward SET retry_at = ? WHERE singleton = 1", this.clock() + delayMs);
  }

  /** When the alarm must retry a failed forward, if one failed. */
  retryAt(): number | undefined {
    return this.state().retry_at ?? undefined;
  }

  /** The session is being deleted: what its tenant acknowledged belongs to a ledger that is gone. */
  forget(): void {
    this.acknowledged = undefined;
  }

  private state(): ForwardState {
    return this.sql.exec<ForwardState>("SELECT forwarded_seq, retry_at FROM usage_forward WHERE singleton = 1").toArray()[0] ?? { forwarded_seq: 0, retry_at: null };
  }
}
