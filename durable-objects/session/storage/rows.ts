import type { Entry, EntryStructure, EntryType } from "../../../schema/entries.ts";
import type { UsageRow } from "../../../schema/usage.ts";
import { fullUsage, type StoredUsage } from "./usage-codec.ts";
import { restoreEntryPayload } from "./entry-codec.ts";
import { readPayload } from "./payload-codec.ts";
import type { SqlHost } from "../../sql/sql-host.ts";
import { idText } from "./stored-ids.ts";

// Row shapes of the session tables and their decoding. Structural columns (id, parent, type) are
// real columns so scans can filter on them; everything else of an entry is its JSON payload.

export type EntryRow = {
  seq: number;
  id: string;
  parent_id: string | null;
  ts: number;
  type: string;
  custom_type: string | null;
  chunks: number;
  payload: string | null;
};

/**
 * The parent's id of the entries row `row` (a table name or alias). Since QUALITY P3 an entry
 * stores its parent only as `parent_seq`, the link the branch walk follows; the id is read through
 * it (one rowid lookup). Rows written earlier, or imported by a fork, may still hold the id text.
 */
export function parentIdOf(row: string): string {
  return `COALESCE(${row}.parent_id, (SELECT ${idText("parent.id")} FROM entries parent WHERE parent.seq = ${row}.parent_seq))`;
}

export const ENTRY_COLUMNS = `seq, ${idText("id")} AS id, ${parentIdOf("entries")} AS parent_id, ts, type, custom_type, chunks, payload`;

/** The columns of a usage row as `UsageTableRow` reads them (ids as text: stored-ids.ts). */
export const USAGE_COLUMNS = `seq, ${idText("id")} AS id, ${idText("entry_id")} AS entry_id, adjustment, payload`;

/**
 * The literal clause a filter on a type other than `message` adds: the type index leaves messages
 * out (session migration 8), and SQLite uses a partial index only for a query whose WHERE clause
 * states the index's own condition; `type = ?` alone does not.
 */
export function rareTypeClauses(type: string | undefined): string[] {
  return type !== undefined && type !== "message" ? ["type <> 'message'"] : [];
}

export type UsageTableRow = {
  seq: number;
  id: string;
  entry_id: string | null;
  adjustment: number;
  payload: string;
};

export function decodeEntry(host: SqlHost, row: EntryRow): Entry {
  const payload = restoreEntryPayload(readPayload<unknown>(host, row.seq, row.chunks, row.payload) ?? {}, row.ts);
  const entry: object = {
    id: row.id,
    parentId: row.parent_id,
    seq: row.seq,
    timestamp: row.ts,
    type: row.type,
    ...(row.custom_type !== null && { customType: row.custom_type }),
    ...payload,
  };
  return entry as Entry;
}

export function decodeStructure(row: Omit<EntryRow, "chunks" | "payload">): EntryStructure {
  return {
    id: row.id,
    parentId: row.parent_id,
    seq: row.seq,
    timestamp: row.ts,
    type: row.type as EntryType,
    ...(row.custom_type !== null && { customType: row.custom_type }),
  };
}

export function decodeUsage(row: UsageTableRow): UsageRow {
  // Bare sparse usage (a row without details), or wrapped with its details (commit-writer.ts);
  // earlier builds wrapped every row.
  const stored: StoredUsage | { usage: StoredUsage; details?: UsageRow["details"] } = JSON.parse(row.payload);
  const payload: { usage: StoredUsage; details?: UsageRow["details"] } = "usage" in stored ? stored : { usage: stored };
  return {
    id: row.id,
    seq: row.seq,
    usage: fullUsage(payload.usage),
    ...(row.entry_id !== null && { entryId: row.entry_id }),
    adjustment: row.adjustment === 1,
    ...(payload.details !== undefined && { details: payload.details }),
  };
}
