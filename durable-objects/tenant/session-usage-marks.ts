import * as v from "valibot";
import { addUsage, zeroUsage } from "../../harness/session/usage.ts";
import { UsageSchema, UsageTotalsSchema, type Usage } from "../../schema/usage.ts";
import { fullUsage, sparseUsage } from "../session/storage/usage-codec.ts";
import type { ForwardedUsage } from "../session/due-work/usage-outbox.ts";

type Mark = { epoch: number; seq: number; usage: string | null };

/**
 * The tenant's usage, kept per session (issue 30 item 6c; issue 33 item 2). Sessions forward their
 * ledger rows at least once (session/due-work/usage-outbox.ts); a row counts only if its seq is past
 * the mark of its session, and the mark row holds that session's sum too, so applying a forward
 * writes one row (the tenant's totals are no second row rewritten by every turn: QUALITY P12).
 *
 * The tenant's totals are the retired totals (`usage_totals`: everything counted before marks held
 * sums, and the sums of sessions since deleted) plus every mark's sum, added up when read. The mark
 * belongs to one incarnation of the session id (`epoch`, its `createdAt`): a session created again
 * under a deleted one's id starts a new ledger, its predecessor's sum is retired, and a forward of
 * an older incarnation still on its way is not applied. A mark leaves with the session's index
 * row, its sum retired; the one repeat that can then slip through is a forward already applied,
 * whose acknowledgment was lost, still in flight when its session is deleted. Every method is one
 * synchronous SQL turn.
 *
 * The sums are never reset, whatever arrives: a usage that is not one request's bounded usage is
 * skipped, and so is an addition whose sum would not be finite; stored totals that do not parse
 * (an older version's) read as zero and stay stored.
 */
export class SessionUsageMarks {
  constructor(private readonly sql: SqlStorage) {}

  /** Adds the rows of `forwarded` past the session's mark to its sum and moves the mark. */
  apply(sessionId: string, forwarded: ForwardedUsage): void {
    const mark = this.sql.exec<Mark>("SELECT epoch, seq, usage FROM session_usage_marks WHERE session_id = ?", sessionId).toArray()[0];
    if (mark && forwarded.epoch < mark.epoch) return;
    const sameIncarnation = mark?.epoch === forwarded.epoch;
    const after = sameIncarnation ? mark.seq : 0;
    const fresh = forwarded.rows.filter((row) => row.seq > after);
    if (fresh.length === 0) return;
    if (mark && !sameIncarnation) this.retire(mark);
    const sum = sameIncarnation ? sumOf(mark.usage) : zeroUsage();
    const next = sum === undefined ? undefined : fresh.reduce((total, row) => addChecked(total, row.usage), sum);
    this.sql.exec(
      `INSERT INTO session_usage_marks (session_id, epoch, seq, usage) VALUES (?1, ?2, ?3, ?4)
       ON CONFLICT (session_id) DO UPDATE SET epoch = excluded.epoch, seq = excluded.seq, usage = coalesce(?4, usage)`,
      sessionId,
      forwarded.epoch,
      Math.max(after, ...fresh.map((row) => row.seq)),
      next === undefined ? null : JSON.stringify(sparseUsage(next)),
    );
  }

  /** The session is gone: its sum is retired into the tenant's totals and its mark deleted. */
  forget(sessionId: string): void {
    const mark = this.sql.exec<Mark>("DELETE FROM session_usage_marks WHERE session_id = ? RETURNING epoch, seq, usage", sessionId).toArray()[0];
    if (mark) this.retire(mark);
  }

  /** The tenant's totals: the retired totals and every session's sum. */
  totals(): Usage {
    let total = this.retired() ?? zeroUsage();
    // One row per session the tenant holds (the index's size), read when the totals are asked for.
    for (const mark of this.sql.exec<Pick<Mark, "usage">>("SELECT usage FROM session_usage_marks WHERE usage IS NOT NULL")) {
      const sum = sumOf(mark.usage);
      if (sum !== undefined) total = addUsage(total, sum);
    }
    return total;
  }

  private retire(mark: Mark): void {
    const sum = sumOf(mark.usage);
    const retired = this.retired();
    if (sum === undefined || retired === undefined) return;
    const next = addUsage(retired, sum);
    if (!v.is(UsageTotalsSchema, next)) return;
    this.sql.exec(
      "INSERT INTO usage_totals (singleton, totals) VALUES (1, ?) ON CONFLICT (singleton) DO UPDATE SET totals = excluded.totals",
      JSON.stringify(next),
    );
  }

  /** The retired totals, zero when none are stored, undefined when what is stored does not parse. */
  private retired(): Usage | undefined {
    const row = this.sql.exec<{ totals: string }>("SELECT totals FROM usage_totals WHERE singleton = 1").toArray()[0];
    return row ? parsedTotals(row.totals, (stored) => stored) : zeroUsage();
  }
}

/** One forwarded usage added to a sum: skipped when it is not one request's bounded usage or the sum would not be finite. */
function addChecked(total: Usage, usage: unknown): Usage {
  const parsed = v.safeParse(UsageSchema, usage);
  if (!parsed.success) return total;
  const next = addUsage(total, parsed.output);
  return v.is(UsageTotalsSchema, next) ? next : total;
}

/** A mark's stored sum: zero before its first, undefined when it does not parse. */
function sumOf(stored: string | null): Usage | undefined {
  return stored === null ? zeroUsage() : parsedTotals(stored, fullUsage);
}

function parsedTotals<T>(text: string, expand: (stored: T) => unknown): Usage | undefined {
  let stored: unknown;
  try {
    stored = expand(JSON.parse(text));
  } catch {
    return undefined;
  }
  const parsed = v.safeParse(UsageTotalsSchema, stored);
  return parsed.success ? parsed.output : undefined;
}
