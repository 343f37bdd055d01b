import { PayloadTooLarge } from "../../../harness/session/errors.ts";
import { PAYLOAD_LIMIT_BYTES } from "../../../harness/session/storage.ts";
import type { SqlHost } from "../../sql/sql-host.ts";

// SQLite on Durable Objects refuses any row, string or BLOB above 2 MB with SQLITE_TOOBIG, and a
// row that cannot be written or read back can brick an object (tldraw#10133). Payloads up to the
// inline limit stay in their row; larger ones are split into BLOB chunks in `payload_chunks`, keyed
// by the write's seq; anything above PAYLOAD_LIMIT is refused before a transaction starts.

export const INLINE_LIMIT = 1024 * 1024;
export const CHUNK_BYTES = 1024 * 1024;
export const PAYLOAD_LIMIT = PAYLOAD_LIMIT_BYTES;

export type EncodedPayload =
  | { inline: string | null; chunks: null }
  | { inline: null; chunks: ArrayBuffer[] };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON-encodes a payload and decides where it lives; throws PayloadTooLarge before any write. */
export function encodePayload(value: unknown): EncodedPayload {
  if (value === undefined) return { inline: null, chunks: null };
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError("A payload must be JSON");
  return encodePayloadText(json);
}

/** Decides where an already-encoded JSON payload lives (a fork copies payloads as text). */
export function encodePayloadText(json: string): EncodedPayload {
  // UTF-8 takes at most 3 bytes per UTF-16 code unit: short strings need no byte count.
  if (json.length * 3 <= INLINE_LIMIT) return { inline: json, chunks: null };
  const bytes = encoder.encode(json);
  if (bytes.byteLength <= INLINE_LIMIT) return { inline: json, chunks: null };
  if (bytes.byteLength > PAYLOAD_LIMIT) throw new PayloadTooLarge(bytes.byteLength, PAYLOAD_LIMIT);
  const chunks: ArrayBuffer[] = [];
  for (let offset = 0; offset < bytes.byteLength; offset += CHUNK_BYTES) {
    chunks.push(bytes.slice(offset, Math.min(offset + CHUNK_BYTES, bytes.byteLength)).buffer);
  }
  return { inline: null, chunks };
}

export function writeChunks(host: SqlHost, seq: number, chunks: readonly ArrayBuffer[]): void {
  chunks.forEach((chunk, index) => {
    host.sql.exec("INSERT INTO payload_chunks (seq, idx, data) VALUES (?, ?, ?)", seq, index, chunk);
  });
}

/** Decodes a stored payload: inline JSON, chunked JSON (chunk count > 0), or absent. */
export function readPayload<T>(host: SqlHost, seq: number, chunks: number, inline: string | null): T | undefined {
  const text = readPayloadText(host, seq, chunks, inline);
  return text === null ? undefined : JSON.parse(text);
}

/** A stored payload's JSON text, joined from its chunks when it has any; null when absent. */
export function readPayloadText(host: SqlHost, seq: number, chunks: number, inline: string | null): string | null {
  if (chunks === 0) return inline;
  const parts = host.sql
    .exec<{ data: ArrayBuffer }>("SELECT data FROM payload_chunks WHERE seq = ? ORDER BY idx", seq)
    .toArray();
  const total = parts.reduce((sum, part) => sum + part.data.byteLength, 0);
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    bytes.set(new Uint8Array(part.data), offset);
    offset += part.data.byteLength;
  }
  return decoder.decode(bytes);
}
