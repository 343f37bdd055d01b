import { StorageCorruption } from "../../../harness/session/errors.ts";
import type { JsonBytes } from "../../../schema/errors.ts";
import type { SqlHost } from "../../sql/sql-host.ts";

// Read replies written as UTF-8 JSON bytes straight from stored payloads. Payloads are stored as
// the JSON text of their value (inline, or in 1 MiB chunks up to 16 MiB), so a reply can splice
// them in without decoding: a 16 MiB entry costs its bytes once, not a decoded copy, a re-encoded
// string and its UTF-16 form. Bytes also cross the Worker↔object RPC boundary at their UTF-8 size,
// while a string holding one character beyond Latin-1 is serialized as UTF-16 (twice the size)
// against the platform's 32 MiB limit on RPC values.

const encoder = new TextEncoder();

/** Collects byte pieces and joins them once. */
export class JsonWriter {
  private readonly parts: Uint8Array[] = [];
  private size = 0;

  text(text: string): this {
    return this.bytes(encoder.encode(text));
  }

  /** `value` as JSON text (ids, numbers, small records: never a stored payload). */
  json(value: unknown): this {
    return this.text(JSON.stringify(value));
  }

  bytes(bytes: Uint8Array): this {
    this.parts.push(bytes);
    this.size += bytes.byteLength;
    return this;
  }

  get length(): number {
    return this.size;
  }

  finish<T>(): JsonBytes<T> {
    const out = new Uint8Array(this.size);
    let offset = 0;
    for (const part of this.parts) {
      out.set(part, offset);
      offset += part.byteLength;
    }
    return out;
  }
}

/** The SQL expression of a stored payload's size in bytes, for a table with `seq`, `chunks` and `column`. */
export function payloadBytesSql(table: string, column: string): string {
  return `CASE WHEN ${table}.chunks = 0 THEN coalesce(length(CAST(${table}.${column} AS BLOB)), 0)
    ELSE (SELECT coalesce(sum(length(c.data)), 0) FROM payload_chunks c WHERE c.seq = ${table}.seq) END`;
}

/** A stored payload's JSON text as bytes: inline text, or its chunks joined; null when absent. */
export function payloadBytes(host: SqlHost, seq: number, chunks: number, inline: string | null): Uint8Array | null {
  if (chunks === 0) return inline === null ? null : encoder.encode(inline);
  const parts = host.sql.exec<{ data: ArrayBuffer }>("SELECT data FROM payload_chunks WHERE seq = ? ORDER BY idx", seq).toArray();
  const writer = new JsonWriter();
  for (const part of parts) writer.bytes(new Uint8Array(part.data));
  return writer.finish();
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * Writes `head` (a JSON object's text) merged with the members of a stored payload object:
 * `{...head, ...payload}` as bytes, for payloads whose keys never repeat the head's (an entry's
 * payload holds everything but its placement columns).
 */
export function mergeObjectBytes(writer: JsonWriter, head: string, payload: Uint8Array | null): void {
  if (payload === null || payload.byteLength <= 2) {
    writer.text(head);
    return;
  }
  if (payload[0] !== OPEN_BRACE || payload[payload.byteLength - 1] !== CLOSE_BRACE) throw new StorageCorruption("A stored payload is not a JSON object");
  writer.text(`${head.slice(0, -1)},`).bytes(payload.subarray(1));
}
