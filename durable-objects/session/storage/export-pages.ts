import type { Entry } from "../../../schema/entries.ts";
import { forkDataPage, type ForkValue } from "./fork-source.ts";
import { entryPage } from "./json-pages.ts";
import { readPayloadText } from "./payload-codec.ts";
import { idText, storedId } from "./stored-ids.ts";
import { RESULTS_NAMESPACE } from "./results-table.ts";
import type { SqlHost } from "../../sql/sql-host.ts";

// The pages of an export (docs/data.md), each a bounded run of JSON Lines read in one synchronous
// step. Entries are write-once, so entry pages up to the high-water mark taken when the export
// began are one coherent snapshot however long the stream takes; list items stop at the same mark;
// values, labels and records are read with their page (one changed meanwhile arrives as it is then).

/** What one page carries at most (a single larger line travels alone), far below the 32 MiB RPC limit. */
export const EXPORT_PAGE_BYTES = 4 * 1024 * 1024;
const EXPORT_PAGE_ROWS = 1_000;

export type ExportCursor =
  | { phase: "entries"; afterSeq: number }
  | { phase: "values"; after: [string, string] | null }
  | { phase: "items"; afterSeq: number }
  | { phase: "labels"; after: string }
  | { phase: "results"; afterSeq: number };

export interface ExportCounts {
  entries: number;
  values: number;
  items: number;
  labels: number;
  results: number;
}

export interface ExportPage {
  /** JSON Lines without their newlines. */
  lines: string[];
  counts: ExportCounts;
  /** Where the next page starts; null after the last. */
  next: ExportCursor | null;
}

export const FIRST_EXPORT_PAGE: ExportCursor = { phase: "entries", afterSeq: 0 };

const none = (): ExportCounts => ({ entries: 0, values: 0, items: 0, labels: 0, results: 0 });

/** A settled operation's public record (harness/runtime/operation-codec.ts readResult). */
export type RecordReader = (operationId: string) => object | undefined;

export function exportPage(host: SqlHost, highWater: number, cursor: ExportCursor, recordOf: RecordReader): ExportPage {
  switch (cursor.phase) {
    case "entries":
      return entryLines(host, highWater, cursor.afterSeq);
    case "values":
    case "items":
      return dataLines(host, highWater, cursor);
    case "labels":
      return labelLines(host, highWater, cursor.after);
    case "results":
      return resultLines(host, highWater, cursor.afterSeq, recordOf);
  }
}

/** Entries in the public shape `GET …/entries` answers (json-pages.ts), by seq up to the mark. */
function entryLines(host: SqlHost, highWater: number, afterSeq: number): ExportPage {
  const bytes = entryPage(host, { order: "asc", cursor: { seq: afterSeq } }, { limit: EXPORT_PAGE_ROWS, budget: EXPORT_PAGE_BYTES });
  const page: { items: Entry[]; nextCursor: string | null } = JSON.parse(decoder.decode(bytes));
  const within = page.items.filter((entry) => entry.seq <= highWater);
  const last = within[within.length - 1];
  const more = page.nextCursor !== null && within.length === page.items.length && last !== undefined;
  const lines = within.map((entry) => JSON.stringify({ type: "entry", entry }));
  return { lines, counts: { ...none(), entries: lines.length }, next: more ? { phase: "entries", afterSeq: last.seq } : { phase: "values", after: null } };
}

/** Application values, then list items, through the fork's pages (tenant namespaces only, never `pi.*`). */
function dataLines(host: SqlHost, highWater: number, cursor: Extract<ExportCursor, { phase: "values" | "items" }>): ExportPage {
  const page = forkDataPage(host, { highWater }, cursor.phase === "values" ? { kind: "values", after: cursor.after } : { kind: "items", afterSeq: cursor.afterSeq });
  const lines = [...page.values.map((value) => valueLine("value", value)), ...page.items.map((item) => valueLine("item", item))];
  const next: ExportCursor =
    page.next === null ? { phase: "labels", after: "" } : page.next.kind === "values" ? { phase: "values", after: page.next.after } : { phase: "items", afterSeq: page.next.afterSeq };
  return { lines, counts: { ...none(), values: page.values.length, items: page.items.length }, next };
}

/** The stored JSON spliced in as it is: a value is never parsed to be written again. */
function valueLine(type: "value" | "item", value: ForkValue): string {
  return `${JSON.stringify({ type, namespace: value.namespace, key: value.key }).slice(0, -1)},"value":${value.json}}`;
}

/**
 * Labels of the exported entries only: an entry added during the download (past the mark) is not in
 * the export, and a label naming it would make the export one its import refuses.
 */
function labelLines(host: SqlHost, highWater: number, after: string): ExportPage {
  const rows = host.sql
    .exec<{ key: string; seq: number; chunks: number; value: string | null }>(
      "SELECT key, seq, chunks, value FROM vals WHERE namespace = 'pi.entry.label' AND key > ? ORDER BY key LIMIT ?",
      after,
      EXPORT_PAGE_ROWS,
    )
    .toArray();
  const exported = (entryId: string) => host.sql.exec<{ seq: number }>("SELECT seq FROM entries WHERE id = ?", storedId(entryId)).toArray().some((entry) => entry.seq <= highWater);
  const lines = rows.flatMap((row) => {
    if (!exported(row.key)) return [];
    const json = readPayloadText(host, row.seq, row.chunks, row.value);
    return json === null ? [] : [`${JSON.stringify({ type: "label", entryId: row.key }).slice(0, -1)},"label":${json}}`];
  });
  const last = rows[rows.length - 1];
  return { lines, counts: { ...none(), labels: lines.length }, next: last && rows.length === EXPORT_PAGE_ROWS ? { phase: "labels", after: last.key } : { phase: "results", afterSeq: 0 } };
}

/**
 * Records of settled operations: most in `op_results`, a chunked one among the values
 * (results-table.ts), each stored in a short form only the engine reads (`recordOf`).
 */
function resultLines(host: SqlHost, highWater: number, afterSeq: number, recordOf: RecordReader): ExportPage {
  const rows = host.sql
    .exec<{ seq: number; key: string }>(
      `SELECT seq, key FROM (
         SELECT seq, ${idText("operation_id")} AS key FROM op_results
         UNION ALL SELECT seq, key FROM vals WHERE namespace = ?
       ) WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
      RESULTS_NAMESPACE,
      afterSeq,
      highWater,
      EXPORT_PAGE_ROWS,
    )
    .toArray();
  const lines = rows.flatMap((row) => {
    const record = recordOf(row.key);
    return record === undefined ? [] : [JSON.stringify({ type: "result", record })];
  });
  const last = rows[rows.length - 1];
  return { lines, counts: { ...none(), results: lines.length }, next: last && rows.length === EXPORT_PAGE_ROWS ? { phase: "results", afterSeq: last.seq } : null };
}

const decoder = new TextDecoder();
