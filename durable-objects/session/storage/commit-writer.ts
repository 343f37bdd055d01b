import { PayloadTooLarge, StorageCorruption } from "../../../harness/session/errors.ts";
import type { Write } from "../../../harness/session/storage.ts";
import { addUsage } from "../../../harness/session/usage.ts";
import type { Usage } from "../../../schema/usage.ts";
import { sparseUsage } from "./usage-codec.ts";
import { INLINE_LIMIT, encodePayload, writeChunks, type EncodedPayload } from "./payload-codec.ts";
import { RESULTS_NAMESPACE, applyResultWrite } from "./results-table.ts";
import { entryPayload, storedEntryPayload } from "./entry-codec.ts";
import type { SqlHost } from "../../sql/sql-host.ts";
import { storedId, storedIdOrNull } from "./stored-ids.ts";

// How each of the six write kinds lands in the session tables, inside the commit's transaction.

export interface Counters {
  nextSeq: number;
  messageCount: number;
  usage: Usage;
}

/** Encodes and size-checks a write's payload, committed at `timestamp`, before any transaction starts (R7). */
export function encodePayloadOf(write: Write, timestamp: number): EncodedPayload {
  switch (write.kind) {
    case "entry": {
      // Only inline payloads take the short stored forms (entry-codec.ts): a chunked one (over
      // 1 MiB) stays plain so that reads can splice it without decoding it (json-bytes.ts).
      const stored = encodePayload(storedEntryPayload(write.entry, timestamp));
      return stored.chunks ? encodePayload(entryPayload(write.entry)) : stored;
    }
    case "usage": {
      const { usage, details } = write.row;
      // A row without details stores its sparse usage bare; a sparse usage has no `usage` key, so
      // reads tell the forms apart (rows.ts decodeUsage).
      const encoded = encodePayload(details === undefined ? sparseUsage(usage) : { usage: sparseUsage(usage), details });
      // Ledger rows are small by nature; their payload column is never chunked.
      if (encoded.chunks) throw new PayloadTooLarge(encoded.chunks.reduce((n, c) => n + c.byteLength, 0), INLINE_LIMIT);
      return encoded;
    }
    case "value":
    case "list":
      if (write.op === "delete") return { inline: null, chunks: null };
      // JSON null is a value; undefined is absence and can only be written as a delete.
      if (write.value === undefined) throw new TypeError(`Cannot store undefined at ${write.namespace}/${write.key}`);
      return encodePayload(write.value);
  }
}

/** Applies one write under its seq; entries and usage rows also advance the session counters. */
export function applyWrite(
  host: SqlHost,
  write: Write,
  payload: EncodedPayload,
  seq: number,
  timestamp: number,
  counters: Counters,
): void {
  const sql = host.sql;
  switch (write.kind) {
    case "entry": {
      const { entry } = write;
      const parentSeq = claimId(host, entry.id, entry.parentId);
      sql.exec(
        // The parent is stored as its seq alone (rows.ts parentIdOf).
        `INSERT INTO entries (seq, id, parent_seq, ts, type, custom_type, chunks, payload)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        seq,
        storedId(entry.id),
        parentSeq,
        timestamp,
        entry.type,
        entry.type === "custom" ? entry.customType : null,
        payload.chunks?.length ?? 0,
        payload.inline,
      );
      if (payload.chunks) writeChunks(host, seq, payload.chunks);
      if (entry.type === "message") counters.messageCount++;
      return;
    }
    case "usage": {
      const { row } = write;
      claimId(host, row.id, null);
      sql.exec(
        "INSERT INTO usage (seq, id, entry_id, adjustment, payload) VALUES (?, ?, ?, ?, ?)",
        seq,
        storedId(row.id),
        storedIdOrNull(row.entryId),
        row.adjustment ? 1 : 0,
        payload.inline,
      );
      counters.usage = addUsage(counters.usage, row.usage);
      return;
    }
    case "value": {
      if (write.namespace === RESULTS_NAMESPACE && applyResultWrite(host, write.key, write.op === "delete" ? undefined : payload, seq)) return;
      // A replaced or deleted value's chunks are released by triggers (session migration 4).
      if (write.op === "delete") {
        sql.exec("DELETE FROM vals WHERE namespace = ? AND key = ?", write.namespace, write.key);
        return;
      }
      sql.exec(
        `INSERT INTO vals (namespace, key, seq, chunks, value) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (namespace, key) DO UPDATE SET seq = excluded.seq, chunks = excluded.chunks, value = excluded.value`,
        write.namespace,
        write.key,
        seq,
        payload.chunks?.length ?? 0,
        payload.inline,
      );
      if (payload.chunks) writeChunks(host, seq, payload.chunks);
      return;
    }
    case "list": {
      if (write.op === "delete") {
        sql.exec("DELETE FROM list_items WHERE namespace = ? AND key = ?", write.namespace, write.key);
        return;
      }
      // An append never reads the list (reference §1.5 rule 6).
      sql.exec(
        "INSERT INTO list_items (seq, namespace, key, chunks, value) VALUES (?, ?, ?, ?, ?)",
        seq,
        write.namespace,
        write.key,
        payload.chunks?.length ?? 0,
        payload.inline,
      );
      if (payload.chunks) writeChunks(host, seq, payload.chunks);
      return;
    }
  }
}

/**
 * Entry and usage ids share one namespace; reusing one is corruption, and so is a parent that
 * does not exist (reference §1.2–1.3). Returns the parent's seq for the branch walk.
 */
function claimId(host: SqlHost, id: string, parentId: string | null): number | null {
  const row = host.sql
    .exec<{ entry: number | null; usage: number | null; parent: number | null }>(
      `SELECT (SELECT 1 FROM entries WHERE id = ?1) AS entry, (SELECT 1 FROM usage WHERE id = ?1) AS usage,
              (SELECT seq FROM entries WHERE id = ?2) AS parent`,
      storedId(id),
      storedIdOrNull(parentId),
    )
    .one();
  if (row.entry !== null || row.usage !== null) throw new StorageCorruption(`Id ${id} is already written`);
  if (parentId !== null && row.parent === null) throw new StorageCorruption(`Parent ${parentId} of ${id} does not exist`);
  return row.parent;
}

