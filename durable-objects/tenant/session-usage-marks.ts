import type { Usage } from "../../schema/usage.ts";
import type { ForwardedUsage } from "../session/due-work/usage-outbox.ts";

type Mark = { epoch: number; seq: number };

/**
 * The tenant's high-water mark of each session's usage ledger (issue 30 item 6c): sessions forward
 * their ledger rows at least once (session/due-work/usage-outbox.ts), and a row is added to the totals only
 * if its seq is past the mark of its session, which then moves, in the caller's transaction. The
 * mark belongs to one incarnation of the session id (`epoch`, its `createdAt`): a session created
 * again under a deleted one's id starts a new ledger and replaces the mark, and a forward of an
 * older incarnation still on its way is not applied. Marks leave with the session's index row
 * (the table stays as small as the index); the one repeat that can then slip through is a forward
 * already applied, whose acknowledgment was lost, still in flight when its session is deleted.
 * Every method is one synchronous SQL turn.
 */
export class SessionUsageMarks {
  constructor(private readonly sql: SqlStorage) {}

  /** The usages of `forwarded` not applied yet, now recorded as applied. */
  unapplied(sessionId: string, forwarded: ForwardedUsage): Usage[] {
    const mark = this.sql.exec<Mark>("SELECT epoch, seq FROM session_usage_marks WHERE session_id = ?", sessionId).toArray()[0];
    if (mark && forwarded.epoch < mark.epoch) return [];
    const after = mark?.epoch === forwarded.epoch ? mark.seq : 0;
    const fresh = forwarded.rows.filter((row) => row.seq > after);
    const last = Math.max(after, ...fresh.map((row) => row.seq));
    if (fresh.length === 0) return [];
    this.sql.exec(
      `INSERT INTO session_usage_marks (session_id, epoch, seq) VALUES (?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE SET epoch = excluded.epoch, seq = excluded.seq`,
      sessionId,
      forwarded.epoch,
      last,
    );
    return fresh.map((row) => row.usage);
  }

  forget(sessionId: string): void {
    this.sql.exec("DELETE FROM session_usage_marks WHERE session_id = ?", sessionId);
  }
}
