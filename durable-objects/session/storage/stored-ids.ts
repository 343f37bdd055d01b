import { isCanonicalUuid } from "../../../harness/session/ids.ts";

// Entry, ledger and result-record ids at rest (QUALITY P3, bytes retained per turn). Every id the engine mints is a
// UUIDv7 whose text is 36 characters; its 16 bytes say the same. Each entry stores its id twice
// (the row and the unique index), each ledger row its own id twice and its entry's id once, so a
// simple turn kept ~100 bytes of hyphens and hex. An id in canonical UUID text (lowercase, hyphens
// in place) is stored as its 16 bytes; any other id, whatever a caller or an earlier build chose,
// as its text. Reads turn the bytes back into the same text in SQL (`idText`), so nothing outside
// these adapters sees the difference, and lookups bind the stored form (`storedId`). Session
// migration 9 converts the text ids earlier builds stored, so one stored form exists per id.

/** The value an id is stored and looked up as: its 16 bytes when it is canonical UUID text. */
export function storedId(id: string): string | ArrayBuffer {
  if (!isCanonicalUuid(id)) return id;
  const bytes = new Uint8Array(16);
  const hex = id.replaceAll("-", "");
  for (let index = 0; index < 16; index++) bytes[index] = Number.parseInt(hex.slice(index * 2, index * 2 + 2), 16);
  return bytes.buffer;
}

/** `storedId` of an optional id. */
export function storedIdOrNull(id: string | null | undefined): string | ArrayBuffer | null {
  return id === null || id === undefined ? null : storedId(id);
}

/** The SQL expression of a stored id's text: the canonical UUID of 16 bytes, or the text as stored. */
export function idText(column: string): string {
  const hex = `hex(${column})`;
  return `(CASE WHEN typeof(${column}) = 'blob' THEN lower(substr(${hex}, 1, 8) || '-' || substr(${hex}, 9, 4) || '-' || substr(${hex}, 13, 4) || '-' || substr(${hex}, 17, 4) || '-' || substr(${hex}, 21)) ELSE ${column} END)`;
}

/** The SQL condition "`column` holds an id in canonical UUID text", for the migration. */
export function isCanonicalUuidText(column: string): string {
  // The platform refuses a GLOB pattern of 36 character classes as too complex: the hyphens are
  // checked in place, the rest is hex when `unhex` accepts it, and lowercase when lower() keeps it.
  const hyphens = [9, 14, 19, 24].map((at) => `substr(${column}, ${at}, 1) = '-'`).join(" AND ");
  return `typeof(${column}) = 'text' AND length(${column}) = 36 AND ${hyphens} AND length(replace(${column}, '-', '')) = 32
    AND ${uuidBytes(column)} IS NOT NULL AND ${column} = lower(${column})`;
}

/** The SQL expression converting canonical UUID text in `column` to its 16 bytes. */
export function uuidBytes(column: string): string {
  return `unhex(replace(${column}, '-', ''))`;
}
