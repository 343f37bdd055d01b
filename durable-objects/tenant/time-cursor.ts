import { invalidInput } from "../rpc/rpc-errors.ts";

/** One page of a listing ordered by (time, id); the cursor is opaque to clients. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** A page of `limit` items from rows fetched with `limit + 1` (the extra row says more exist). */
export function timePage<R, T>(rows: readonly R[], limit: number, at: (row: R) => number, id: (row: R) => string, view: (row: R) => T): Page<T> {
  const kept = rows.slice(0, limit);
  const last = kept[kept.length - 1];
  return { items: kept.map(view), nextCursor: rows.length > limit && last ? encodeTimeCursor(at(last), id(last)) : null };
}

/** Longer than any id a listing pages by (session ids, key ids, names are at most 256 characters). */
const MAX_CURSOR_ID_LENGTH = 512;

export function encodeTimeCursor(at: number, id: string): string {
  return btoa(JSON.stringify([at, id])).replace(/=+$/, "");
}

/**
 * The position after which a page starts; a cursor that is not one of ours is a 400. Ours hold a
 * time in milliseconds (or a version number) and an id: a position of any other shape (`1e999`,
 * a fraction, a negative) could only be forged, and would answer a page that is empty or wrong.
 */
export function decodeTimeCursor(cursor: string | undefined): { at: number; id: string } {
  if (cursor === undefined) return { at: -1, id: "" };
  try {
    const [at, id]: unknown[] = JSON.parse(atob(cursor));
    if (typeof at === "number" && Number.isSafeInteger(at) && at >= 0 && typeof id === "string" && id.length <= MAX_CURSOR_ID_LENGTH) return { at, id };
  } catch {
    // fall through
  }
  throw invalidInput("cursor", "Invalid cursor");
}
