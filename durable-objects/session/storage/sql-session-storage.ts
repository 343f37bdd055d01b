import type { Entry, EntryStructure } from "../../../schema/entries.ts";
import type { SessionStats, UsageRow } from "../../../schema/usage.ts";
import type { Value, ValueList } from "../../../harness/session/addresses.ts";
import { StorageClosed, StorageCorruption } from "../../../harness/session/errors.ts";
import {
  clampLimit,
  type CommitResult,
  type EntryScan,
  type ListElement,
  type ListReadOptions,
  type SessionMetadata,
  type Storage,
  type StorageBranchScan,
  type StoredValue,
  type UsageScan,
  type Write,
} from "../../../harness/session/storage.ts";
import { addUsage, zeroUsage } from "../../../harness/session/usage.ts";
import { fullUsage, sparseUsage } from "./usage-codec.ts";
import { walkBranch } from "./branch-walk.ts";
import { applyWrite, encodePayloadOf, type Counters } from "./commit-writer.ts";
import { readPayload } from "./payload-codec.ts";
import { RESULTS_NAMESPACE, readResultRow, scanResultRows, type StoredRow } from "./results-table.ts";
import {
  ENTRY_COLUMNS,
  USAGE_COLUMNS,
  decodeEntry,
  rareTypeClauses,
  decodeUsage,
  type EntryRow,
  type UsageTableRow,
} from "./rows.ts";
import { chunked, placeholders, type SqlHost } from "../../sql/sql-host.ts";
import { storedId } from "./stored-ids.ts";

export const STORAGE_VERSION = 1;

type MetaRow = {
  session_id: string;
  tenant_id: string;
  created_at: number;
  storage_version: number;
  parent_session_id: string | null;
};

type CountersRow = { next_seq: number; message_count: number; counted_through: number; usage: string };

/**
 * What the stored counters row says: every seq in use is below `seqLimit`, and `messageCount`
 * messages were counted up to the seq before it was written.
 */
interface StoredCounters {
  seqLimit: number;
  messageCount: number;
  /** Ledger rows committed since the row was stored: their usage is not in its totals. */
  usageRowsAfter: number;
}

/**
 * Seqs a commit may hand out past the stored row's limit without storing the row. Rows written are
 * most of a turn's bill (QUALITY P12): the row is a checkpoint, stored when the limit is reached or
 * when too many messages or ledger rows were committed after it, not with every commit. Opening
 * counts the messages and adds up the ledger rows committed after it (a range of each table's
 * rowid, a few dozen rows at most). A restarted object continues at the limit, so the seqs between
 * the last one used and the limit are never used (seqs order writes; they were never dense:
 * deleted values leave gaps too).
 */
export const SEQ_RESERVE = 1024;
/** Messages committed before the counters row is stored again: bounds what opening counts. */
export const UNSTORED_MESSAGES_MAX = 64;
/** Ledger rows committed before the counters row is stored again: bounds what opening adds up. */
export const UNSTORED_USAGE_ROWS_MAX = 64;


export interface CreateSessionMetadata {
  id: string;
  tenantId: string;
  createdAt: number;
  parentSessionId?: string;
  /** A fork keeps source seqs; the destination continues after the source's high-water mark. */
  nextSeq?: number;
}

/**
 * The session Storage port over Durable Object SQLite (ARCHITECTURE D5). Every commit is one
 * `transactionSync`: all-or-none, one strictly increasing seq per write, stats maintained in the
 * same transaction. Counters are cached in memory and only replaced after a commit succeeded.
 */
export class SqlSessionStorage implements Storage {
  private closed = false;

  private constructor(
    private readonly host: SqlHost,
    readonly metadata: SessionMetadata,
    readonly tenantId: string,
    private counters: Counters,
    private stored: StoredCounters,
    private readonly clock: () => number,
  ) {}

  /** The session stored in this object, or undefined when none was created. */
  static open(host: SqlHost, clock: () => number = Date.now): SqlSessionStorage | undefined {
    const row = host.sql.exec<MetaRow>("SELECT * FROM meta WHERE singleton = 1").toArray()[0];
    if (!row) return undefined;
    const metadata: SessionMetadata = {
      id: row.session_id,
      createdAt: row.created_at,
      storageVersion: row.storage_version,
      ...(row.parent_session_id !== null && { parentSessionId: row.parent_session_id }),
    };
    const stored = host.sql.exec<CountersRow>("SELECT next_seq, message_count, counted_through, usage FROM counters WHERE singleton = 1").toArray()[0];
    if (!stored) throw new StorageCorruption("The session has metadata but no counters");
    // The messages committed since the row was stored: a range of the entries' rowid, a few rows.
    const uncounted = host.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM entries WHERE seq > ? AND type = 'message'", stored.counted_through)
      .one().n;
    // The ledger rows committed since, added to the stored totals as their commits added them.
    const unsummed = host.sql
      .exec<UsageTableRow>(`SELECT ${USAGE_COLUMNS} FROM usage WHERE seq > ? ORDER BY seq`, stored.counted_through)
      .toArray()
      .map(decodeUsage);
    const usage = unsummed.reduce((totals, ledgerRow) => addUsage(totals, ledgerRow.usage), fullUsage(JSON.parse(stored.usage)));
    const counters = { nextSeq: stored.next_seq, messageCount: stored.message_count + uncounted, usage };
    return new SqlSessionStorage(
      host,
      metadata,
      row.tenant_id,
      counters,
      { seqLimit: stored.next_seq, messageCount: counters.messageCount, usageRowsAfter: unsummed.length },
      clock,
    );
  }

  /** Writes only the metadata row: no branch, no lane (WP06: no implicit main). */
  static create(host: SqlHost, init: CreateSessionMetadata, clock: () => number = Date.now): SqlSessionStorage {
    if (SqlSessionStorage.open(host, clock)) throw new StorageCorruption("A session already exists in this object");
    host.sql.exec(
      `INSERT INTO meta (singleton, session_id, tenant_id, created_at, storage_version, parent_session_id)
       VALUES (1, ?, ?, ?, ?, ?)`,
      init.id,
      init.tenantId,
      init.createdAt,
      STORAGE_VERSION,
      init.parentSessionId ?? null,
    );
    insertCounters(host, init.nextSeq ?? 1, 0);
    const opened = SqlSessionStorage.open(host, clock);
    if (!opened) throw new StorageCorruption("Session metadata was not stored");
    return opened;
  }

  commit(writes: readonly Write[]): CommitResult {
    this.assertOpen();
    // Encode and size-check every payload first: a refused payload writes nothing (R7).
    const timestamp = this.clock();
    const prepared = writes.map((write) => ({ write, payload: encodePayloadOf(write, timestamp) }));
    const next = this.host.transactionSync(() => {
      const counters = { ...this.counters };
      const seqs: number[] = [];
      for (const { write, payload } of prepared) {
        const seq = counters.nextSeq++;
        seqs.push(seq);
        applyWrite(this.host, write, payload, seq, timestamp, counters);
      }
      const usageRows = prepared.filter(({ write }) => write.kind === "usage").length;
      return { counters, seqs, stored: this.storeCounters(counters, usageRows) };
    });
    this.counters = next.counters;
    this.stored = next.stored;
    return {
      firstSeq: next.seqs[0] ?? next.counters.nextSeq,
      seqs: next.seqs,
      timestamp,
      stats: this.statsOf(next.counters),
    };
  }

  getEntries(ids: readonly string[]): Map<string, Entry> {
    this.assertOpen();
    const found = new Map<string, Entry>();
    for (const batch of chunked([...new Set(ids)])) {
      const rows = this.host.sql
        .exec<EntryRow>(`SELECT ${ENTRY_COLUMNS} FROM entries WHERE id IN (${placeholders(batch.length)})`, ...batch.map(storedId))
        .toArray();
      for (const row of rows) found.set(row.id, decodeEntry(this.host, row));
    }
    return found;
  }

  getValue<T>(address: Value<T>): StoredValue<T> | undefined {
    this.assertOpen();
    const row =
      address.namespace === RESULTS_NAMESPACE
        ? readResultRow(this.host, address.key)
        : this.host.sql
            .exec<{ seq: number; chunks: number; value: string | null }>(
              "SELECT seq, chunks, value FROM vals WHERE namespace = ? AND key = ?",
              address.namespace,
              address.key,
            )
            .toArray()[0];
    if (!row) return undefined;
    return { address, seq: row.seq, value: readPayload<T>(this.host, row.seq, row.chunks, row.value) as T };
  }

  scanValues<T>(prefix: Value<T>, limit = Number.POSITIVE_INFINITY): StoredValue<T>[] {
    this.assertOpen();
    const rows = prefix.namespace === RESULTS_NAMESPACE ? scanResultRows(this.host, prefix.key).slice(0, limit) : this.scanValueRows(prefix.namespace, prefix.key, limit);
    return rows.map((row) => ({
      address: { kind: "value", namespace: prefix.namespace, key: row.key },
      seq: row.seq,
      value: readPayload<T>(this.host, row.seq, row.chunks, row.value) as T,
    }));
  }

  private scanValueRows(namespace: string, prefix: string, limit: number): StoredRow[] {
    // Keys sharing a prefix are contiguous in SQLite's binary (UTF-8) order: start at the prefix and
    // stop at the first key that does not share it (or at the limit: the rest is never read).
    const rows: StoredRow[] = [];
    const cursor = this.host.sql.exec<StoredRow>("SELECT key, seq, chunks, value FROM vals WHERE namespace = ? AND key >= ? ORDER BY key", namespace, prefix);
    for (const row of cursor) {
      if (!row.key.startsWith(prefix) || rows.length >= limit) break;
      rows.push(row);
    }
    return rows;
  }

  readList<T>(address: ValueList<T>, options: ListReadOptions = {}): ListElement<T>[] {
    this.assertOpen();
    const limit = clampLimit(options.limit);
    const descending = options.order === "desc";
    const cursor = options.cursor?.seq ?? (descending ? Number.MAX_SAFE_INTEGER : 0);
    const rows = this.host.sql
      .exec<{ seq: number; chunks: number; value: string | null }>(
        `SELECT seq, chunks, value FROM list_items WHERE namespace = ? AND key = ? AND seq ${descending ? "<" : ">"} ?
         ORDER BY seq ${descending ? "DESC" : "ASC"} LIMIT ?`,
        address.namespace,
        address.key,
        cursor,
        limit,
      )
      .toArray();
    return rows.map((row) => ({ seq: row.seq, value: readPayload<T>(this.host, row.seq, row.chunks, row.value) as T }));
  }

  scanBranch(scan: StorageBranchScan): Entry[] {
    const structure = this.scanBranchStructure(scan);
    const entries = this.getEntriesBySeq(structure.map((entry) => entry.seq));
    return structure.map((entry) => {
      const full = entries.get(entry.seq);
      if (!full) throw new StorageCorruption(`Entry ${entry.id} vanished during a scan`);
      return full;
    });
  }

  scanBranchStructure(scan: StorageBranchScan): EntryStructure[] {
    this.assertOpen();
    if (scan.limit !== undefined) assertLimit(scan.limit);
    return walkBranch(this.host, scan);
  }

  scanEntries(scan: EntryScan = {}): Entry[] {
    this.assertOpen();
    const { where, bindings } = conditions([
      ["type = ?", scan.type],
      ["custom_type = ?", scan.customType],
      ["seq >= ?", scan.fromSeq],
      ["seq <= ?", scan.toSeq],
    ], rareTypeClauses(scan.type));
    const rows = this.host.sql
      .exec<EntryRow>(
        `SELECT ${ENTRY_COLUMNS} FROM entries ${where} ORDER BY seq ${scan.order === "desc" ? "DESC" : "ASC"}${limitClause(scan.limit, bindings)}`,
        ...bindings,
      )
      .toArray();
    return rows.map((row) => decodeEntry(this.host, row));
  }

  scanUsage(scan: UsageScan = {}): UsageRow[] {
    this.assertOpen();
    const { where, bindings } = conditions([
      ["seq >= ?", scan.fromSeq],
      ["seq <= ?", scan.toSeq],
    ]);
    const rows = this.host.sql
      .exec<UsageTableRow>(
        `SELECT ${USAGE_COLUMNS} FROM usage ${where} ORDER BY seq ${scan.order === "desc" ? "DESC" : "ASC"}${limitClause(scan.limit, bindings)}`,
        ...bindings,
      )
      .toArray();
    return rows.map(decodeUsage);
  }

  getStats(): SessionStats {
    this.assertOpen();
    return this.statsOf(this.counters);
  }

  /** The seq the next write will get: a fork's destination continues from here. */
  get nextSeq(): number {
    return this.counters.nextSeq;
  }

  close(): void {
    this.closed = true;
  }

  private getEntriesBySeq(seqs: readonly number[]): Map<number, Entry> {
    const found = new Map<number, Entry>();
    for (const batch of chunked(seqs)) {
      const rows = this.host.sql
        .exec<EntryRow>(`SELECT ${ENTRY_COLUMNS} FROM entries WHERE seq IN (${placeholders(batch.length)})`, ...batch)
        .toArray();
      for (const row of rows) found.set(row.seq, decodeEntry(this.host, row));
    }
    return found;
  }

  /**
   * Stores the counters row when this commit must (SEQ_RESERVE): it used a seq at or past the
   * stored limit, or left too many messages or ledger rows after the checkpoint. Inside the
   * commit's transaction, so the row never claims less than the commit wrote.
   */
  private storeCounters(counters: Counters, usageRows: number): StoredCounters {
    const usageRowsAfter = this.stored.usageRowsAfter + usageRows;
    const mustStore =
      counters.nextSeq > this.stored.seqLimit ||
      counters.messageCount - this.stored.messageCount >= UNSTORED_MESSAGES_MAX ||
      usageRowsAfter >= UNSTORED_USAGE_ROWS_MAX;
    if (!mustStore) return { ...this.stored, usageRowsAfter };
    const seqLimit = counters.nextSeq + SEQ_RESERVE;
    this.host.sql.exec(
      "UPDATE counters SET next_seq = ?, message_count = ?, counted_through = ?, usage = ? WHERE singleton = 1",
      seqLimit,
      counters.messageCount,
      counters.nextSeq - 1,
      // Sparse like the ledger rows (usage-codec.ts): most totals carry several zeros.
      JSON.stringify(sparseUsage(counters.usage)),
    );
    return { seqLimit, messageCount: counters.messageCount, usageRowsAfter: 0 };
  }

  private statsOf(counters: Counters): SessionStats {
    return { messageCount: counters.messageCount, usage: structuredClone(counters.usage) };
  }

  private assertOpen(): void {
    if (this.closed) throw new StorageClosed();
  }
}

function conditions(candidates: [string, string | number | undefined][], literal: readonly string[] = []): { where: string; bindings: (string | number)[] } {
  const present = candidates.filter((candidate): candidate is [string, string | number] => candidate[1] !== undefined);
  const clauses = [...present.map(([clause]) => clause), ...literal];
  return {
    where: clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : "",
    bindings: present.map(([, binding]) => binding),
  };
}

function assertLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("limit must be a positive safe integer");
}

function limitClause(limit: number | undefined, bindings: (string | number)[]): string {
  if (limit === undefined) return "";
  assertLimit(limit);
  bindings.push(limit);
  return " LIMIT ?";
}

/** The counters row of a new session (or a fork's destination) whose next seq is `nextSeq`. */
export function insertCounters(host: SqlHost, nextSeq: number, messageCount: number): void {
  host.sql.exec(
    "INSERT INTO counters (singleton, next_seq, message_count, counted_through, usage) VALUES (1, ?, ?, ?, ?)",
    nextSeq,
    messageCount,
    nextSeq - 1,
    JSON.stringify(sparseUsage(zeroUsage())),
  );
}
