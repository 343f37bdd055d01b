import type { Entry } from "../../schema/entries.ts";
import type { SessionStats } from "../../schema/usage.ts";
import type { Value, ValueList } from "./addresses.ts";
import { MutationMisuse } from "./errors.ts";
import type {
  CommitResult,
  ListElement,
  ListReadOptions,
  Storage,
  StorageBranchScan,
  StoredValue,
  Write,
} from "./storage.ts";

/** The reads every session surface offers; each observes the latest fully applied commit. */
export interface SessionReader {
  getEntries(ids: readonly string[]): Map<string, Entry>;
  getStats(): SessionStats;
  getValue<T>(address: Value<T>): StoredValue<T> | undefined;
  scanValues<T>(prefix: Value<T>): StoredValue<T>[];
  readList<T>(address: ValueList<T>, options?: ListReadOptions): ListElement<T>[];
  scanBranch(scan: StorageBranchScan): Entry[];
}

/** What a mutation callback holds: bounded reads and at most one commit (reference §2.1). */
export interface SessionMutator extends SessionReader {
  /** Exactly zero or one attempt per capability; a second call throws, even after a failure. */
  commit(writes: readonly Write[]): CommitResult;
}

/** An explicit scope: holds the session's line until `end()`, across awaits if need be. */
export interface SessionMutation extends SessionMutator {
  /** Invalidates the capability and releases the line. Idempotent; ending without commit is legal. */
  end(): void;
}

/** A synchronous mutation callback (ARCHITECTURE D4): it may not return a promise. */
export type MutationCallback<T> = (mutator: SessionMutator) => T extends PromiseLike<unknown> ? never : T;

export type CommitObserver = (writes: readonly Write[], error: unknown) => void;

/** One mutation capability over the storage; created only while the line is held. */
export class MutationScope implements SessionMutation {
  private committed = false;
  private ended = false;

  constructor(
    private readonly storage: Storage,
    private readonly release: () => void,
    private readonly onCommitFailure: CommitObserver,
  ) {}

  private live(): Storage {
    if (this.ended) throw new MutationMisuse("This mutation has ended");
    return this.storage;
  }

  getEntries(ids: readonly string[]): Map<string, Entry> {
    return this.live().getEntries(ids);
  }
  getStats(): SessionStats {
    return this.live().getStats();
  }
  getValue<T>(address: Value<T>): StoredValue<T> | undefined {
    return this.live().getValue(address);
  }
  scanValues<T>(prefix: Value<T>): StoredValue<T>[] {
    return this.live().scanValues(prefix);
  }
  readList<T>(address: ValueList<T>, options?: ListReadOptions): ListElement<T>[] {
    return this.live().readList(address, options);
  }
  scanBranch(scan: StorageBranchScan): Entry[] {
    return this.live().scanBranch(scan);
  }

  commit(writes: readonly Write[]): CommitResult {
    const storage = this.live();
    if (this.committed) throw new MutationMisuse("A mutation commits at most once");
    this.committed = true;
    try {
      return storage.commit(writes);
    } catch (error) {
      this.onCommitFailure(writes, error);
      throw error;
    }
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.release();
  }
}
