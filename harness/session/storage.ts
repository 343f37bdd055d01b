import type { Entry, EntryStructure, EntryType, NewEntry } from "../../schema/entries.ts";
import type { SessionStats, UsageRow } from "../../schema/usage.ts";
import type { Value, ValueList } from "./addresses.ts";

// The Storage port (ARCHITECTURE D3/D5, reference §1.5–1.6). It is synchronous on purpose: Durable
// Object SQLite is synchronous, so a mutation is one synchronous callback with no await inside it
// (D4). One Storage serves one session; its commit is the only way anything durable changes.

export type Write =
  | { kind: "entry"; entry: NewEntry }
  | { kind: "usage"; row: NewUsageRow }
  | { kind: "value"; op: "set"; namespace: string; key: string; value: unknown }
  | { kind: "value"; op: "delete"; namespace: string; key: string }
  | { kind: "list"; op: "append"; namespace: string; key: string; value: unknown }
  | { kind: "list"; op: "delete"; namespace: string; key: string };

export type NewUsageRow = Omit<UsageRow, "seq">;

export interface CommitResult {
  firstSeq: number;
  /** One strictly increasing seq per write, in write order. */
  seqs: number[];
  timestamp: number;
  /** Session totals immediately after this commit. */
  stats: SessionStats;
}

export interface StoredValue<T> {
  address: Value<T>;
  value: T;
  seq: number;
}

export interface ListElement<T> {
  seq: number;
  value: T;
}

export interface ListReadOptions {
  /** Exclusive: asc returns seq > cursor.seq, desc returns seq < cursor.seq. */
  cursor?: { seq: number };
  order?: "asc" | "desc";
  /** Default 1000, clamped to 10000. */
  limit?: number;
}

export type BranchOrder = "newestFirst" | "oldestFirst";

/** A branch scan as Storage sees it: `start` is required (Branch and Lane default it to their tip). */
export interface StorageBranchScan {
  start: string;
  stopAtType?: EntryType;
  stopAtId?: string;
  type?: EntryType;
  customType?: string;
  order?: BranchOrder;
  limit?: number;
  cursor?: { seq: number };
}

export interface EntryScan {
  type?: EntryType;
  customType?: string;
  fromSeq?: number;
  toSeq?: number;
  order?: "asc" | "desc";
  limit?: number;
}

export interface UsageScan {
  fromSeq?: number;
  toSeq?: number;
  order?: "asc" | "desc";
  limit?: number;
}

export interface SessionMetadata {
  id: string;
  createdAt: number;
  storageVersion: number;
  parentSessionId?: string;
}

export interface Storage {
  readonly metadata: SessionMetadata;
  commit(writes: readonly Write[]): CommitResult;
  getEntries(ids: readonly string[]): Map<string, Entry>;
  getValue<T>(address: Value<T>): StoredValue<T> | undefined;
  /** Namespace-scoped, key-ascending; the address key is a prefix. At most `limit` values are read when given. */
  scanValues<T>(prefix: Value<T>, limit?: number): StoredValue<T>[];
  readList<T>(address: ValueList<T>, options?: ListReadOptions): ListElement<T>[];
  scanBranch(scan: StorageBranchScan): Entry[];
  scanBranchStructure(scan: StorageBranchScan): EntryStructure[];
  scanEntries(scan?: EntryScan): Entry[];
  scanUsage(scan?: UsageScan): UsageRow[];
  getStats(): SessionStats;
  /** Idempotent; afterwards every call throws StorageClosed. */
  close(): void;
}

export const LIST_LIMIT_DEFAULT = 1000;
export const LIST_LIMIT_MAX = 10000;

/** Normalizes a requested page size: positive safe integer, default 1000, clamped to 10000. */
export function clampLimit(limit: number | undefined): number {
  if (limit === undefined) return LIST_LIMIT_DEFAULT;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("limit must be a positive safe integer");
  return Math.min(limit, LIST_LIMIT_MAX);
}

/**
 * The largest payload one write may carry (an entry's, a value's or a list element's JSON), for
 * every Storage implementation: larger writes are refused with PayloadTooLarge before anything is
 * written. The engine checks what it builds itself against it (a compaction entry) so that an
 * oversized result fails its operation instead of failing every retry of the commit.
 */
export const PAYLOAD_LIMIT_BYTES = 16 * 1024 * 1024;
