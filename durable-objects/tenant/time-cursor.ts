import { invalidInput } from "../rpc/rpc-errors.ts";

/** One page of a listing ordered by (time, id); the cursor is opaque to clients. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * The listings paged by (time, id). Their positions all have the same shape, so a cursor names the
 * listing it came from: one listing refuses another's (it would answer a page after a position of
 * some other order) instead of paging from it.
 */
export type TimeListing = "session" | "agent" | "agent-version" | "tool" | "mcp" | "key" | "tenant" | "delivery";

/** A page of `limit` items from rows fetched with `limit + 1` (the extra row says more exist). */
export function timePage<R, T>(listing: TimeListing, rows: readonly R[], limit: number, at: (row: R) => number, id: (row: R) => string, view: (row: R) => T): Page<T> {
  const kept = rows.slice(0, limit);
  const last = kept[kept.length - 1];
  return { items: kept.map(view), nextCursor: rows.length > limit && last ? encodeTimeCursor(listing, at(last), id(last)) : null };
}

/**
 * The items of a page bounded by count and by bytes: it ends at `limit` items or before the item
 * that would take it past `budget` bytes, whichever comes first. The first item always goes on (one
 * alone may fill the page), so every page but the last moves the listing on.
 */
export class PageItems<T> {
  readonly items: T[] = [];
  private bytes = 0;

  constructor(
    private readonly limit: number,
    private readonly budget: number,
  ) {}

  /** Whether an item of `size` bytes goes on this page; false: the page ends before it. */
  fits(size: number): boolean {
    return this.items.length < this.limit && (this.items.length === 0 || this.bytes + size <= this.budget);
  }

  add(item: T, size: number): void {
    this.items.push(item);
    this.bytes += size;
  }
}

/**
 * A page of rows fetched with `limit + 1`, bounded by bytes too (PageItems): rows are read one at a
 * time, so a page of large items never holds more than it answers; any row left unread means more
 * exist, and the cursor continues after the last row answered.
 */
export function boundedPage<R, T>(rows: Iterable<R>, page: { limit: number; budget: number }, size: (row: R) => number, view: (row: R) => T, cursor: (row: R) => string): Page<T> {
  const items = new PageItems<T>(page.limit, page.budget);
  let last: R | undefined;
  for (const row of rows) {
    const bytes = size(row);
    if (!items.fits(bytes)) return { items: items.items, nextCursor: last ? cursor(last) : null };
    items.add(view(row), bytes);
    last = row;
  }
  return { items: items.items, nextCursor: null };
}

/** Longer than any id a listing pages by (session ids, key ids, names are at most 256 characters). */
const MAX_CURSOR_ID_LENGTH = 512;

export function encodeTimeCursor(listing: TimeListing, at: number, id: string): string {
  return btoa(JSON.stringify([listing, at, id])).replace(/=+$/, "");
}

/**
 * The position after which a page of `listing` starts; a cursor that is not one of this listing's
 * is a 400. Ours hold a time in milliseconds (or a version number) and an id: a position of any
 * other shape (`1e999`, a fraction, a negative) could only be forged, and would answer a page that
 * is empty or wrong.
 */
export function decodeTimeCursor(listing: TimeListing, cursor: string | undefined): { at: number; id: string } {
  if (cursor === undefined) return { at: -1, id: "" };
  try {
    const [kind, at, id]: unknown[] = JSON.parse(atob(cursor));
    if (kind === listing && typeof at === "number" && Number.isSafeInteger(at) && at >= 0 && typeof id === "string" && id.length <= MAX_CURSOR_ID_LENGTH) return { at, id };
  } catch {
    // fall through
  }
  throw invalidInput("cursor", "Invalid cursor");
}
