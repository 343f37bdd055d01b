/** The slice of `DurableObjectStorage` the SQL adapters use; tests hand in the real one. */
export interface SqlHost {
  readonly sql: SqlStorage;
  transactionSync<T>(closure: () => T): T;
}

/** SQLite's bound-parameter ceiling on Durable Objects is 100; stay under it with room to spare. */
export const MAX_BOUND_PARAMETERS = 90;

export function chunked<T>(items: readonly T[], size = MAX_BOUND_PARAMETERS): T[][] {
  const batches: T[][] = [];
  for (let index = 0; index < items.length; index += size) batches.push(items.slice(index, index + size));
  return batches;
}

export const placeholders = (count: number): string => Array.from({ length: count }, () => "?").join(", ");
