import * as v from "valibot";
import { isReservedNamespace } from "../../../harness/session/addresses.ts";
import { ExportLineSchema, IMPORT_SEQ_MAX, SessionLineSchema, type EndLine, type ExportLine, type SessionLine } from "../../../schema/data-export.ts";
import type { Entry, NewEntry } from "../../../schema/entries.ts";
import { describeIssue } from "../../../schema/validation-messages.ts";
import { zeroUsage } from "../../../harness/session/usage.ts";
import { RpcError } from "../../rpc/rpc-errors.ts";
import { applyWrite, encodePayloadOf, type Counters } from "./commit-writer.ts";
import { encodePayloadText, readPayloadText, writeChunks } from "./payload-codec.ts";
import { storedId } from "./stored-ids.ts";
import type { SqlHost } from "../../sql/sql-host.ts";

// An import staged in the target session's own tables (docs/data.md): entries keep their seqs and
// ids, values and list items take seqs after them. The object holds no session (no metadata row)
// until the commit, so every call but the import's answers SessionNotFound meanwhile. The import's
// progress lives in two rows of the reserved `pi.import` namespace, removed by the commit: its
// state and the header line, both at seq 0. A part that fails is rolled back to the seq mark taken
// when it began (every row it wrote has a seq above it) and loses the header if it brought it.

const STATE_KEY = ["pi.import", "state"] as const;
const HEADER_KEY = ["pi.import", "header"] as const;

export type ImportCounts = Omit<EndLine, "type">;

export interface ImportState {
  importId: string;
  tenantId: string;
  sessionId: string;
  creationToken?: string;
  /** When an uncommitted import is deleted (the object's alarm). */
  expiresAt: number;
  /** Parts written whole. */
  partsDone: number;
  /** The part being written, its attempt, and the progress before it (its rows have seqs above `before.maxSeq`). */
  open?: { part: number; attempt: string; before: Progress };
  progress: Progress;
}

export interface Progress {
  maxSeq: number;
  lastEntrySeq: number;
  messages: number;
  lines: number;
  header: boolean;
  ended: boolean;
  counts: ImportCounts;
}

export const NO_PROGRESS: Progress = { maxSeq: 0, lastEntrySeq: 0, messages: 0, lines: 0, header: false, ended: false, counts: { entries: 0, values: 0, items: 0, labels: 0, results: 0 } };

function invalid(line: number, reason: string, message: string): RpcError {
  return new RpcError({ code: "InvalidImport", message: `Line ${line}: ${message}`, details: { line, reason } });
}

export function readImportState(host: SqlHost): ImportState | undefined {
  const row = host.sql.exec<{ value: string | null }>("SELECT value FROM vals WHERE namespace = ? AND key = ?", ...STATE_KEY).toArray()[0];
  return row?.value ? JSON.parse(row.value) : undefined;
}

export function writeImportState(host: SqlHost, state: ImportState): void {
  host.sql.exec(
    "INSERT INTO vals (namespace, key, seq, chunks, value) VALUES (?, ?, 0, 0, ?) ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value",
    ...STATE_KEY,
    JSON.stringify(state),
  );
}

export function readImportHeader(host: SqlHost): SessionLine | undefined {
  const row = host.sql.exec<{ seq: number; chunks: number; value: string | null }>("SELECT seq, chunks, value FROM vals WHERE namespace = ? AND key = ?", ...HEADER_KEY).toArray()[0];
  const json = row && readPayloadText(host, row.seq, row.chunks, row.value);
  return json ? v.parse(SessionLineSchema, JSON.parse(json)) : undefined;
}

/** Removes the import's own rows (the commit's last step). */
export function clearImportRows(host: SqlHost): void {
  host.sql.exec("DELETE FROM vals WHERE namespace = 'pi.import'");
}

/** Every row a failed part wrote has a seq above its mark, but the header (seq 0), removed when the part brought it. */
export function rollbackTo(host: SqlHost, before: Progress): void {
  host.transactionSync(() => {
    for (const table of ["entries", "list_items", "vals", "payload_chunks"]) host.sql.exec(`DELETE FROM ${table} WHERE seq > ?`, before.maxSeq);
    // Its chunks go with it (the values table's triggers).
    if (!before.header) host.sql.exec("DELETE FROM vals WHERE namespace = ? AND key = ?", ...HEADER_KEY);
  });
}

/** Parses one line of the stream (1-based `line` for the error). */
export function parseLine(text: string, line: number): ExportLine {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalid(line, "malformed", "not a JSON value");
  }
  const parsed = v.safeParse(ExportLineSchema, json);
  if (!parsed.success) {
    // In the API's words, as every other 4xx says what is wrong (never valibot's own phrasing).
    throw invalid(line, "invalid_line", describeIssue(parsed.issues[0], "line"));
  }
  return parsed.output;
}

/** Writes one parsed line under the stream's rules (order, unique ids, parents before children). */
export function stageLine(host: SqlHost, progress: Progress, line: ExportLine, lineNumber: number): void {
  if (progress.ended) throw invalid(lineNumber, "after_end", "nothing may follow the end line");
  if (line.type !== "session" && !progress.header) throw invalid(lineNumber, "header_first", "the first line must be the session header");
  switch (line.type) {
    case "session": {
      if (progress.header) throw invalid(lineNumber, "second_header", "a stream has one session header");
      // At seq 0, outside the seqs of the session's rows (entries keep theirs from 1).
      const payload = encodePayloadText(JSON.stringify(line));
      host.sql.exec("INSERT INTO vals (namespace, key, seq, chunks, value) VALUES (?, ?, 0, ?, ?)", ...HEADER_KEY, payload.chunks?.length ?? 0, payload.inline);
      if (payload.chunks) writeChunks(host, 0, payload.chunks);
      progress.header = true;
      return;
    }
    case "entry":
      return stageEntry(host, progress, line.entry, lineNumber);
    case "value":
    case "item": {
      if (isReservedNamespace(line.namespace)) throw invalid(lineNumber, "reserved_namespace", `namespace "${line.namespace}" is reserved for the runtime`);
      if (line.type === "value" && host.sql.exec("SELECT 1 FROM vals WHERE namespace = ? AND key = ?", line.namespace, line.key).toArray().length > 0) {
        throw invalid(lineNumber, "duplicate_value", `value ${line.namespace}/${line.key} appears twice`);
      }
      const write = line.type === "value" ? { kind: "value" as const, op: "set" as const, namespace: line.namespace, key: line.key, value: line.value } : { kind: "list" as const, op: "append" as const, namespace: line.namespace, key: line.key, value: line.value };
      apply(host, progress, write, ++progress.maxSeq, Date.now());
      progress.counts[line.type === "value" ? "values" : "items"]++;
      return;
    }
    case "label": {
      if (host.sql.exec("SELECT 1 FROM entries WHERE id = ?", storedId(line.entryId)).toArray().length === 0) throw invalid(lineNumber, "unknown_entry", `label of entry ${line.entryId}, which the stream does not hold`);
      apply(host, progress, { kind: "value", op: "set", namespace: "pi.entry.label", key: line.entryId, value: line.label }, ++progress.maxSeq, Date.now());
      progress.counts.labels++;
      return;
    }
    case "result":
      // History of runs: counted for the end line's check, not imported (docs/data.md).
      progress.counts.results++;
      return;
    case "end": {
      const { type: _type, ...expected } = line;
      const differs = (Object.keys(expected) as (keyof ImportCounts)[]).filter((kind) => expected[kind] !== progress.counts[kind]);
      if (differs.length > 0) throw invalid(lineNumber, "counts_differ", `the end line counts ${differs.map((kind) => `${expected[kind]} ${kind}`).join(", ")}, the stream held ${differs.map((kind) => `${progress.counts[kind]} ${kind}`).join(", ")}`);
      progress.ended = true;
      return;
    }
  }
}

function stageEntry(host: SqlHost, progress: Progress, entry: Entry, lineNumber: number): void {
  if (!Number.isSafeInteger(entry.seq) || entry.seq <= progress.maxSeq) throw invalid(lineNumber, "seq_order", `entry ${entry.id} has seq ${entry.seq}: entries come first, in increasing seq`);
  if (entry.seq > IMPORT_SEQ_MAX) throw invalid(lineNumber, "seq_order", `entry ${entry.id} has seq ${entry.seq}, above ${IMPORT_SEQ_MAX}: no session has written that many rows`);
  // As an append refuses it (reference §1.2): an answer still streaming is never an entry.
  if (entry.type === "message" && entry.message.role === "assistant" && entry.message.stopReason === "pending") {
    throw invalid(lineNumber, "pending_assistant", `entry ${entry.id} is an assistant message still streaming (stopReason "pending"), which is never stored`);
  }
  const row = host.sql
    .exec<{ taken: number | null; parent: number | null }>(
      "SELECT (SELECT 1 FROM entries WHERE id = ?1) AS taken, (SELECT seq FROM entries WHERE id = ?2) AS parent",
      storedId(entry.id),
      entry.parentId === null ? null : storedId(entry.parentId),
    )
    .one();
  if (row.taken !== null) throw invalid(lineNumber, "duplicate_id", `entry id ${entry.id} appears twice`);
  if (entry.parentId !== null && row.parent === null) throw invalid(lineNumber, "unknown_parent", `the parent ${entry.parentId} of entry ${entry.id} is not an earlier entry`);
  const { seq, timestamp, ...placed } = entry;
  const newEntry: NewEntry = placed;
  apply(host, progress, { kind: "entry", entry: newEntry }, seq, timestamp);
  progress.lastEntrySeq = seq;
  progress.counts.entries++;
}

function apply(host: SqlHost, progress: Progress, write: Parameters<typeof encodePayloadOf>[0], seq: number, timestamp: number): void {
  const counters: Counters = { nextSeq: seq + 1, messageCount: progress.messages, usage: zeroUsage() };
  const payload = encodePayloadOf(write, timestamp);
  host.transactionSync(() => applyWrite(host, write, payload, seq, timestamp, counters));
  progress.messages = counters.messageCount;
  progress.maxSeq = Math.max(progress.maxSeq, seq);
}
