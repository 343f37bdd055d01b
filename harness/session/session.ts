import type { Entry, EntryStructure, EntryType } from "../../schema/entries.ts";
import type { SessionStats } from "../../schema/usage.ts";
import type { Value, ValueList } from "./addresses.ts";
import { Branch, validateBranchName } from "./branch.ts";
import { branchTip, entryLabel, sessionName } from "./builtin-addresses.ts";
import { BranchExists, PayloadTooLarge, SessionClosed, UnknownTarget, MutationMisuse } from "./errors.ts";
import { uuidv7Ids, type IdGenerator } from "./ids.ts";
import { MutationLine } from "./mutation-line.ts";
import { MutationScope, type MutationCallback, type SessionMutation, type SessionReader } from "./mutation.ts";
import type {
  CommitResult,
  ListElement,
  ListReadOptions,
  SessionMetadata,
  Storage,
  StorageBranchScan,
  StoredValue,
  Write,
} from "./storage.ts";
import * as writes from "./writes.ts";

/** Session-wide entry inventory query (reference §1.6 EntryQuery); the cursor is exclusive. */
export interface EntryQuery {
  type?: EntryType;
  customType?: string;
  order?: "asc" | "desc";
  limit?: number;
  cursor?: { seq: number };
}

export type { MutationCallback } from "./mutation.ts";

export interface SessionOptions {
  ids?: IdGenerator;
}

/**
 * One session: global durable data plus its single mutation line (reference §2.1, WP06). It is not a
 * Branch and has no implicit `main`. Reads go straight to storage; every write goes through the line.
 */
export class Session implements SessionReader {
  readonly idGenerator: IdGenerator;
  private readonly line = new MutationLine();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly storage: Storage,
    options: SessionOptions = {},
  ) {
    this.idGenerator = options.ids ?? uuidv7Ids;
  }

  get metadata(): SessionMetadata {
    return this.storage.metadata;
  }

  get closed(): boolean {
    return this.line.sealed;
  }

  // Direct reads: each observes the latest fully applied commit; several reads are not a snapshot.

  getEntry(id: string): Entry | undefined {
    return this.storage.getEntries([id]).get(id);
  }
  getEntries(ids: readonly string[]): Map<string, Entry> {
    return this.storage.getEntries(ids);
  }
  getStats(): SessionStats {
    return this.storage.getStats();
  }
  getValue<T>(address: Value<T>): StoredValue<T> | undefined {
    return this.storage.getValue(address);
  }
  scanValues<T>(prefix: Value<T>, limit?: number): StoredValue<T>[] {
    return this.storage.scanValues(prefix, limit);
  }
  readList<T>(address: ValueList<T>, options?: ListReadOptions): ListElement<T>[] {
    return this.storage.readList(address, options);
  }
  scanBranch(scan: StorageBranchScan): Entry[] {
    return this.storage.scanBranch(scan);
  }
  /** The same walk over structure only (ids, parents, types): no payload is read. */
  scanBranchStructure(scan: StorageBranchScan): EntryStructure[] {
    return this.storage.scanBranchStructure(scan);
  }
  findEntries(query: EntryQuery = {}): Entry[] {
    const order = query.order ?? "asc";
    const cursor = query.cursor?.seq;
    return this.storage.scanEntries({
      ...(query.type !== undefined && { type: query.type }),
      ...(query.customType !== undefined && { customType: query.customType }),
      order,
      ...(query.limit !== undefined && { limit: query.limit }),
      ...(cursor !== undefined && (order === "asc" ? { fromSeq: cursor + 1 } : { toSeq: cursor - 1 })),
    });
  }
  findEntry(query: EntryQuery = {}): Entry | undefined {
    return this.findEntries({ ...query, limit: 1 })[0];
  }
  getName(): string | undefined {
    return this.storage.getValue(sessionName)?.value;
  }
  getLabel(targetId: string): string | undefined {
    return this.storage.getValue(entryLabel(targetId))?.value;
  }

  /** The named branch, or undefined when no tip value exists for it. */
  branch(name: string): Branch | undefined {
    validateBranchName(name);
    return this.storage.getValue(branchTip(name)) ? new Branch(this, name) : undefined;
  }

  /** Validates name, absence and target, then writes only the tip, atomically. */
  async createBranch(name: string, at: string | null): Promise<Branch> {
    validateBranchName(name);
    await this.mutate((m) => {
      if (m.getValue(branchTip(name))) throw new BranchExists(name);
      if (at !== null && !m.getEntries([at]).has(at)) throw new UnknownTarget(at);
      m.commit([writes.setValue(branchTip(name), at)]);
    });
    return new Branch(this, name);
  }

  // The mutation line.

  /** Acquires the line for an explicit scope; the caller must `end()` it (in a finally). */
  async beginMutation(): Promise<SessionMutation> {
    const release = await this.line.acquire();
    return new MutationScope(this.storage, release, this.commitFailed);
  }

  /** Runs a synchronous callback alone on the line: bounded reads, at most one commit. */
  async mutate<T>(callback: MutationCallback<T>): Promise<T> {
    const scope = await this.beginMutation();
    try {
      const result: unknown = callback(scope);
      if (isThenable(result)) throw new MutationMisuse("A mutation callback must be synchronous");
      return result as T;
    } finally {
      scope.end();
    }
  }

  /** One-write conveniences, each one mutation. */
  setValue<T>(address: Value<T>, next: NoInfer<T>): Promise<CommitResult> {
    return this.commitOne(writes.setValue(address, next));
  }
  deleteValue<T>(address: Value<T>): Promise<CommitResult> {
    return this.commitOne(writes.deleteValue(address));
  }
  appendList<T>(address: ValueList<T>, element: NoInfer<T>): Promise<CommitResult> {
    return this.commitOne(writes.appendList(address, element));
  }
  deleteList<T>(address: ValueList<T>): Promise<CommitResult> {
    return this.commitOne(writes.deleteList(address));
  }

  /** Latest-wins session name; `undefined` deletes it. Never moves a tip. */
  setName(name: string | undefined): Promise<CommitResult> {
    return this.commitOne(name === undefined ? writes.deleteValue(sessionName) : writes.setValue(sessionName, name));
  }

  /** Latest-wins label of an existing entry; `undefined` deletes it. Never moves a tip. */
  setLabel(targetId: string, label: string | undefined): Promise<CommitResult> {
    return this.mutate((m) => {
      if (label === undefined) return m.commit([writes.deleteValue(entryLabel(targetId))]);
      if (!m.getEntries([targetId]).has(targetId)) throw new UnknownTarget(targetId);
      return m.commit([writes.setValue(entryLabel(targetId), label)]);
    });
  }

  /** Seals admission, waits for every admitted scope to end, then closes storage. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.line.seal(new SessionClosed()).then(() => this.storage.close());
    return this.closing;
  }

  private commitOne(write: Write): Promise<CommitResult> {
    return this.mutate((m) => m.commit([write]));
  }

  /**
   * A failed admitted commit is a fault (reference §1.5): durable and in-memory state may disagree,
   * so nothing more is admitted. A payload refused by the size check wrote nothing and is not one.
   */
  private readonly commitFailed = (_writes: readonly Write[], error: unknown): void => {
    if (error instanceof PayloadTooLarge) return;
    void this.line.seal(new SessionClosed(`The session faulted: ${describe(error)}`));
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
