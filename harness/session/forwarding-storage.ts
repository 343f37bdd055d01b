import type { Entry, EntryStructure } from "../../schema/entries.ts";
import type { SessionStats, UsageRow } from "../../schema/usage.ts";
import type { Value, ValueList } from "./addresses.ts";
import type {
  CommitResult,
  EntryScan,
  ListElement,
  ListReadOptions,
  SessionMetadata,
  Storage,
  StorageBranchScan,
  StoredValue,
  UsageScan,
  Write,
} from "./storage.ts";

/**
 * A Storage that forwards every call to another: the base for instrumented decorators (write
 * recorders for writer-conformance checks and benches, injected commit failures for crash tests).
 * Subclasses override what they observe, usually `commit`.
 */
export class ForwardingStorage implements Storage {
  constructor(protected readonly inner: Storage) {}

  get metadata(): SessionMetadata {
    return this.inner.metadata;
  }
  commit(writes: readonly Write[]): CommitResult {
    return this.inner.commit(writes);
  }
  getEntries(ids: readonly string[]): Map<string, Entry> {
    return this.inner.getEntries(ids);
  }
  getValue<T>(address: Value<T>): StoredValue<T> | undefined {
    return this.inner.getValue(address);
  }
  scanValues<T>(prefix: Value<T>, limit?: number): StoredValue<T>[] {
    return this.inner.scanValues(prefix, limit);
  }
  readList<T>(address: ValueList<T>, options?: ListReadOptions): ListElement<T>[] {
    return this.inner.readList(address, options);
  }
  scanBranch(scan: StorageBranchScan): Entry[] {
    return this.inner.scanBranch(scan);
  }
  scanBranchStructure(scan: StorageBranchScan): EntryStructure[] {
    return this.inner.scanBranchStructure(scan);
  }
  scanEntries(scan?: EntryScan): Entry[] {
    return this.inner.scanEntries(scan);
  }
  scanUsage(scan?: UsageScan): UsageRow[] {
    return this.inner.scanUsage(scan);
  }
  getStats(): SessionStats {
    return this.inner.getStats();
  }
  close(): void {
    this.inner.close();
  }
}
