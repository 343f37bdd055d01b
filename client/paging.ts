import type { Page } from "./types.ts";

/**
 * Every item of a cursor-paged listing, fetching pages lazily: `for await (const s of paginate(…))`.
 * `fetchPage` receives the cursor of the next page (undefined for the first).
 */
export async function* paginate<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  for await (const page of pages(fetchPage)) yield* page.items;
}

/** Every page of a cursor-paged listing, lazily. */
export async function* pages<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<Page<T>, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield page;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}
