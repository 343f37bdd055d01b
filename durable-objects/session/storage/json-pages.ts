import type { EntryQuery } from "../../../harness/session/session.ts";
import type { StorageBranchScan } from "../../../harness/session/storage.ts";
import { encodeSeqCursor } from "../../../schema/api-sessions.ts";
import type { Entry, EntryStructure } from "../../../schema/entries.ts";
import type { JsonBytes } from "../../../schema/errors.ts";
import type { JsonValue } from "../../../schema/json.ts";
import type { Usage, UsageRow } from "../../../schema/usage.ts";
import { USAGE_EXPANSION_BYTES } from "./usage-codec.ts";
import { walkBranch } from "./branch-walk.ts";
import { MESSAGE_EXPANSION_BYTES, restoreEntryPayloadText } from "./entry-codec.ts";
import { JsonWriter, mergeObjectBytes, payloadBytes, payloadBytesSql } from "./json-bytes.ts";
import { decodeStructure, decodeUsage, parentIdOf, rareTypeClauses, USAGE_COLUMNS, type EntryRow, type UsageTableRow } from "./rows.ts";
import { idText, storedId } from "./stored-ids.ts";
import { chunked, placeholders, type SqlHost } from "../../sql/sql-host.ts";

// The paged reads of the REST API, bounded by count and by bytes (ARCHITECTURE D16/D17: no answer
// may fail on the platform's 32 MiB RPC limit). Sizes come from SQL first (`length` of the stored
// payloads), so a page decides where it ends before it reads any payload; then only the page's
// payloads are read and spliced into the answer's JSON bytes. A page ends at `limit` items or
// before the item that would take it past `budget` bytes, whichever comes first, and always holds
// at least one item: an entry larger than the budget (up to the 16 MiB payload limit) comes back
// alone, so one answer stays under about 16 MiB plus a little framing.

export interface PageRequest {
  limit: number;
  budget: number;
}

export type Page<T> = { items: T[]; nextCursor: string | null };
/** A list read: order, and an exclusive cursor in that order. */
export type ListPageOptions = { order: "asc" | "desc"; cursor?: { seq: number } };
export type UsagePage = { rows: UsageRow[]; totals: Usage; nextFromSeq: number | null };

/** Framing per item beyond its payload: ids, seq, type, commas (generous; ids are ≤ 64 characters). */
const ITEM_OVERHEAD = 256;

/** The prefix of `candidates` (fetched with `limit + 1`) that fits the page, and whether more exist. */
export function takeWithin<T>(candidates: readonly T[], page: PageRequest, bytesOf: (item: T) => number): { taken: T[]; more: boolean } {
  const taken: T[] = [];
  let used = 0;
  for (const candidate of candidates) {
    if (taken.length === page.limit) break;
    const bytes = bytesOf(candidate) + ITEM_OVERHEAD;
    if (taken.length > 0 && used + bytes > page.budget) break;
    taken.push(candidate);
    used += bytes;
  }
  return { taken, more: candidates.length > taken.length };
}

type SizedStructure = EntryStructure & { chunks: number; bytes: number };
type SizedEntryRow = Omit<EntryRow, "payload"> & { bytes: number };

const ENTRY_STRUCTURE = `seq, ${idText("id")} AS id, ${parentIdOf("entries")} AS parent_id, ts, type, custom_type, chunks`;
const ENTRY_BYTES = payloadBytesSql("entries", "payload");

/** `GET /sessions/{sid}/entries`: every entry by seq, filtered, from an exclusive cursor. */
export function entryPage(host: SqlHost, query: EntryQuery, page: PageRequest): JsonBytes<Page<Entry>> {
  const descending = query.order === "desc";
  const clauses: string[] = [];
  const bindings: (string | number)[] = [];
  if (query.type !== undefined) {
    clauses.push("type = ?", ...rareTypeClauses(query.type));
    bindings.push(query.type);
  }
  if (query.customType !== undefined) {
    clauses.push("custom_type = ?");
    bindings.push(query.customType);
  }
  if (query.cursor !== undefined) {
    clauses.push(descending ? "seq < ?" : "seq > ?");
    bindings.push(query.cursor.seq);
  }
  const rows = host.sql
    .exec<SizedEntryRow>(
      `SELECT ${ENTRY_STRUCTURE}, ${ENTRY_BYTES} AS bytes FROM entries ${clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : ""}
       ORDER BY seq ${descending ? "DESC" : "ASC"} LIMIT ?`,
      ...bindings,
      page.limit + 1,
    )
    .toArray();
  return entriesAnswer(host, rows.map(sizedStructure), page);
}

/** `GET /sessions/{sid}/branches/{name}/entries`: the branch scan of reference §1.6, a page at a time. */
export function branchEntryPage(host: SqlHost, scan: StorageBranchScan, page: PageRequest): JsonBytes<Page<Entry>> {
  const structure = walkBranch(host, { ...scan, limit: page.limit + 1 });
  const sizes = new Map<number, { chunks: number; bytes: number }>();
  for (const batch of chunked(structure.map((entry) => entry.seq))) {
    const rows = host.sql
      .exec<{ seq: number; chunks: number; bytes: number }>(`SELECT seq, chunks, ${ENTRY_BYTES} AS bytes FROM entries WHERE seq IN (${placeholders(batch.length)})`, ...batch)
      .toArray();
    for (const row of rows) sizes.set(row.seq, row);
  }
  return entriesAnswer(host, structure.map((entry) => ({ ...entry, chunks: sizes.get(entry.seq)?.chunks ?? 0, bytes: sizes.get(entry.seq)?.bytes ?? 0 })), page);
}

/** `GET /sessions/{sid}/entries/{entryId}`: one entry, or undefined when no entry has that id. */
export function entryAnswer(host: SqlHost, id: string): JsonBytes<Entry> | undefined {
  const row = host.sql.exec<EntryRow>(`SELECT ${ENTRY_STRUCTURE}, payload FROM entries WHERE id = ?`, storedId(id)).toArray()[0];
  if (!row) return undefined;
  const writer = new JsonWriter();
  writeEntry(writer, host, decodeStructure(row), row.chunks, row.payload);
  return writer.finish();
}

/** `GET /sessions/{sid}/lists/{namespace}/{key}`: list items by seq from an exclusive cursor. */
export function listPage(host: SqlHost, namespace: string, key: string, options: ListPageOptions, page: PageRequest): JsonBytes<Page<{ seq: number; value: JsonValue }>> {
  const descending = options.order === "desc";
  const rows = host.sql
    .exec<{ seq: number; chunks: number; bytes: number }>(
      `SELECT seq, chunks, ${payloadBytesSql("list_items", "value")} AS bytes FROM list_items
       WHERE namespace = ? AND key = ? AND seq ${descending ? "<" : ">"} ? ORDER BY seq ${descending ? "DESC" : "ASC"} LIMIT ?`,
      namespace,
      key,
      options.cursor?.seq ?? (descending ? Number.MAX_SAFE_INTEGER : 0),
      page.limit + 1,
    )
    .toArray();
  const { taken, more } = takeWithin(rows, page, (row) => row.bytes);
  const inline = inlinePayloads(host, "list_items", "value", taken);
  const writer = new JsonWriter().text("{\"items\":[");
  taken.forEach((row, index) => {
    writer.text(`${index > 0 ? "," : ""}{"seq":${row.seq}`);
    const value = payloadBytes(host, row.seq, row.chunks, inline.get(row.seq) ?? null);
    if (value !== null) writer.text(",\"value\":").bytes(value);
    writer.text("}");
  });
  return finishPage(writer, taken, more);
}

/** `GET /sessions/{sid}/values/{namespace}/{key}`: `{ value, seq }`, or undefined when absent. */
export function valueAnswer(host: SqlHost, namespace: string, key: string): JsonBytes<{ value: JsonValue; seq: number }> | undefined {
  const row = host.sql
    .exec<{ seq: number; chunks: number; value: string | null }>("SELECT seq, chunks, value FROM vals WHERE namespace = ? AND key = ?", namespace, key)
    .toArray()[0];
  if (!row) return undefined;
  const value = payloadBytes(host, row.seq, row.chunks, row.value);
  return new JsonWriter().text("{\"value\":").bytes(value ?? encoder.encode("null")).text(`,"seq":${row.seq}}`).finish();
}

/** `GET /sessions/{sid}/usage`: ledger rows with seq ≥ fromSeq, ascending, and the session totals. */
export function usagePage(host: SqlHost, fromSeq: number | undefined, totals: Usage, page: PageRequest): JsonBytes<UsagePage> {
  const sized = host.sql
    .exec<{ seq: number; bytes: number }>("SELECT seq, length(CAST(payload AS BLOB)) AS bytes FROM usage WHERE seq >= ? ORDER BY seq ASC LIMIT ?", fromSeq ?? 0, page.limit + 1)
    .toArray();
  // Stored rows are sparse (usage-codec.ts): the answer carries each row at its full shape.
  const { taken, more } = takeWithin(sized, page, (row) => row.bytes + USAGE_EXPANSION_BYTES);
  const last = taken[taken.length - 1];
  const rows =
    last === undefined
      ? []
      : host.sql
          .exec<UsageTableRow>(`SELECT ${USAGE_COLUMNS} FROM usage WHERE seq >= ? AND seq <= ? ORDER BY seq ASC`, fromSeq ?? 0, last.seq)
          .toArray()
          .map(decodeUsage);
  return new JsonWriter().json({ rows, totals, nextFromSeq: more && last ? last.seq + 1 : null }).finish();
}

const encoder = new TextEncoder();

function sizedStructure(row: SizedEntryRow): SizedStructure {
  return { ...decodeStructure(row), chunks: row.chunks, bytes: row.bytes };
}

function entriesAnswer(host: SqlHost, candidates: readonly SizedStructure[], page: PageRequest): JsonBytes<Page<Entry>> {
  // A message's usage and timestamp are stored short (entry-codec.ts): its answer may be longer.
  const { taken, more } = takeWithin(candidates, page, (entry) => entry.bytes + (entry.type === "message" ? MESSAGE_EXPANSION_BYTES : 0));
  const inline = inlinePayloads(host, "entries", "payload", taken);
  const writer = new JsonWriter().text("{\"items\":[");
  taken.forEach((entry, index) => {
    if (index > 0) writer.text(",");
    writeEntry(writer, host, entry, entry.chunks, inline.get(entry.seq) ?? null);
  });
  return finishPage(writer, taken, more);
}

/** An entry as `decodeEntry` shapes it: placement columns first, then the payload's members. */
function writeEntry(writer: JsonWriter, host: SqlHost, entry: EntryStructure, chunks: number, inline: string | null): void {
  const head = JSON.stringify({
    id: entry.id,
    parentId: entry.parentId,
    seq: entry.seq,
    timestamp: entry.timestamp,
    type: entry.type,
    ...(entry.customType !== undefined && { customType: entry.customType }),
  });
  // Only inline payloads hold short members (commit-writer.ts); chunked ones splice as stored.
  const stored = entry.type === "message" && inline !== null ? restoreEntryPayloadText(inline, entry.timestamp) : inline;
  mergeObjectBytes(writer, head, payloadBytes(host, entry.seq, chunks, stored));
}

/** The inline payload texts of the chosen rows (chunked ones are read row by row when written). */
function inlinePayloads(host: SqlHost, table: "entries" | "list_items", column: "payload" | "value", rows: readonly { seq: number; chunks: number }[]): Map<number, string> {
  const found = new Map<number, string>();
  const seqs = rows.filter((row) => row.chunks === 0).map((row) => row.seq);
  for (const batch of chunked(seqs)) {
    const texts = host.sql
      .exec<{ seq: number; text: string | null }>(`SELECT seq, ${column} AS text FROM ${table} WHERE seq IN (${placeholders(batch.length)})`, ...batch)
      .toArray();
    for (const { seq, text } of texts) if (text !== null) found.set(seq, text);
  }
  return found;
}

function finishPage<T>(writer: JsonWriter, taken: readonly { seq: number }[], more: boolean): JsonBytes<Page<T>> {
  const last = taken[taken.length - 1];
  return writer.text(`],"nextCursor":${JSON.stringify(more && last ? encodeSeqCursor(last.seq) : null)}}`).finish();
}
