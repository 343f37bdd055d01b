import { operationResult } from "../../../harness/session/builtin-addresses.ts";
import type { EncodedPayload } from "./payload-codec.ts";
import type { SqlHost } from "../../sql/sql-host.ts";
import { idText, storedId } from "./stored-ids.ts";

// Where the `pi.result` values live (session migration 8, QUALITY P3): the records of settled
// operations, one per operation, written once and kept forever, in the `op_results` table. A
// record whose payload needs chunks stays in the values table with them, so reads look in both;
// databases written before the migration had their inline records moved by it. The key is stored
// as the ids of entries are (stored-ids.ts: 16 bytes for a UUID; session migration 9).

export const RESULTS_NAMESPACE = operationResult("").namespace;

export type StoredRow = {
  key: string;
  seq: number;
  chunks: number;
  value: string | null;
};

/**
 * Applies a set or delete of a `pi.result` value. True when the record now lives in `op_results`;
 * false when the caller must apply the write to the values table as well: a delete (the record
 * may be a chunked one there) or a chunked payload (its inline copy here is removed first, so it
 * cannot shadow the new one).
 */
export function applyResultWrite(host: SqlHost, key: string, payload: EncodedPayload | undefined, seq: number): boolean {
  if (payload === undefined || payload.inline === null) {
    host.sql.exec("DELETE FROM op_results WHERE operation_id = ?", storedId(key));
    return false;
  }
  host.sql.exec(
    `INSERT INTO op_results (operation_id, seq, record) VALUES (?, ?, ?)
     ON CONFLICT (operation_id) DO UPDATE SET seq = excluded.seq, record = excluded.record`,
    storedId(key),
    seq,
    payload.inline,
  );
  return true;
}

/** The stored row of one record, inline in `op_results` or chunked in the values table. */
export function readResultRow(host: SqlHost, key: string): StoredRow | undefined {
  const row = host.sql
    .exec<{ seq: number; record: string }>("SELECT seq, record FROM op_results WHERE operation_id = ?", storedId(key))
    .toArray()[0];
  if (row) return { key, seq: row.seq, chunks: 0, value: row.record };
  return host.sql
    .exec<{ seq: number; chunks: number; value: string | null }>("SELECT seq, chunks, value FROM vals WHERE namespace = ? AND key = ?", RESULTS_NAMESPACE, key)
    .toArray()
    .map((found) => ({ key, ...found }))[0];
}

/**
 * Every record whose operation id starts with `prefix`, from both places, in key order. Keys stored
 * as bytes have no text order in SQL, so this reads every record: records are read by their key,
 * and no path of the engine scans them (tests and tools do).
 */
export function scanResultRows(host: SqlHost, prefix: string): StoredRow[] {
  const rows: StoredRow[] = [];
  for (const row of host.sql.exec<{ key: string; seq: number; record: string }>(`SELECT ${idText("operation_id")} AS key, seq, record FROM op_results`)) {
    if (row.key.startsWith(prefix)) rows.push({ key: row.key, seq: row.seq, chunks: 0, value: row.record });
  }
  for (const row of host.sql.exec<StoredRow>(
    "SELECT key, seq, chunks, value FROM vals WHERE namespace = ? AND key >= ? ORDER BY key",
    RESULTS_NAMESPACE,
    prefix,
  )) {
    if (!row.key.startsWith(prefix)) break;
    rows.push(row);
  }
  // Operation ids are ASCII: JavaScript's order of them is SQLite's.
  return rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
