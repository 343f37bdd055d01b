import { DueWork, type AlarmHost } from "../durable-objects/session/due-work/due-work.ts";
import { FORWARD_BATCH } from "../durable-objects/session/due-work/settlement-outbox.ts";
import { sparseUsage } from "../durable-objects/session/storage/usage-codec.ts";
import { encodePayloadOf } from "../durable-objects/session/storage/commit-writer.ts";
import { RESULTS_NAMESPACE } from "../durable-objects/session/storage/results-table.ts";
import { storedId } from "../durable-objects/session/storage/stored-ids.ts";
import { ForwardingStorage } from "../harness/session/forwarding-storage.ts";
import type { SqlHost } from "../durable-objects/sql/sql-host.ts";
import { SqlSessionStorage, UNSTORED_USAGE_ROWS_MAX } from "../durable-objects/session/storage/sql-session-storage.ts";
import { AgentHarness } from "../harness/runtime/harness.ts";
import { longOperationForm } from "../harness/runtime/operation-short-form.ts";
import type { AgentLane } from "../harness/runtime/lane.ts";
import { Session } from "../harness/session/session.ts";
import type { CommitResult, Storage, Write } from "../harness/session/storage.ts";
import type { ModelsPort } from "../harness/execution/models.ts";
import { createModelRegistry } from "../models/registry.ts";
import { SessionScriptSource } from "../models/scripted/script-source.ts";
import type { ModelIdentity, OperationResultRecord } from "../schema/lane.ts";

// The engine as the benches drive it (P2–P4): a real AgentHarness over the object's real SQLite
// storage, exactly as SessionRuntime builds it, except that the storage and the SQL handle are
// wrapped so every durable write can be counted:
//
//   SqlTap          wraps `state.storage.sql`: counts write statements (INSERT/UPDATE/DELETE), the
//                   bytes bound into them and SQLite's own `rowsWritten`, split into inside and
//                   outside Storage.commit (the host's `due_work` schedule writes outside it).
//   CountingStorage decorates the Storage port: logs every commit with its writes and time.
//
// The hosted SessionObject keeps its own (idle) Session over the same tables; the benches never use
// it after `create`, because its cached counters do not see these commits. The DueWork schedule is
// the real one over the tapped SQL, but its alarm calls are counted instead of arming the object's
// alarm, so the hosted runtime never drives these operations concurrently.

/** One Storage.commit as CountingStorage saw it. */
export interface CommitRecord {
  writes: readonly Write[];
  /** Date.now() right after the commit returned: the engine's own clock (core.clock, the frame coalescer's). */
  at: number;
  result: CommitResult;
}

/** Tallies of the statements the tap saw. */
export interface SqlTally {
  statements: number;
  rowsWritten: number;
  boundBytes: number;
  /** SQLite's rowsRead over every statement (reads included), summed when the tally is taken. */
  rowsRead: number;
}

const WRITE_STATEMENT = /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i;
const encoder = new TextEncoder();

export const utf8Bytes = (text: string): number => encoder.encode(text).byteLength;

/** Bytes SQLite receives for one bound value: UTF-8 text, blob length, 8 for a number, 0 for NULL. */
function boundBytes(value: unknown): number {
  if (typeof value === "string") return utf8Bytes(value);
  if (value instanceof ArrayBuffer) return value.byteLength;
  if (ArrayBuffer.isView(value)) return value.byteLength;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") return 8;
  return 0;
}

const zeroTally = (): SqlTally => ({ statements: 0, rowsWritten: 0, boundBytes: 0, rowsRead: 0 });

/** A pass-through SqlStorage that counts write statements. */
export class SqlTap implements SqlStorage {
  /** Set by CountingStorage while Storage.commit runs. */
  inCommit = false;
  inside: SqlTally = zeroTally();
  outside: SqlTally = zeroTally();

  constructor(private readonly inner: SqlStorage) {}

  /** Cursors since the last take: their rowsRead grows as they are consumed. */
  private cursors: { cursor: SqlStorageCursor<Record<string, SqlStorageValue>>; inCommit: boolean }[] = [];

  exec<T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]): SqlStorageCursor<T> {
    const cursor = this.inner.exec<T>(query, ...bindings);
    this.cursors.push({ cursor, inCommit: this.inCommit });
    if (WRITE_STATEMENT.test(query)) {
      const tally = this.inCommit ? this.inside : this.outside;
      tally.statements++;
      tally.boundBytes += bindings.reduce<number>((sum, value) => sum + boundBytes(value), 0);
      // A statement without result rows runs to completion inside exec().
      tally.rowsWritten += cursor.rowsWritten;
    }
    return cursor;
  }

  get databaseSize(): number {
    return this.inner.databaseSize;
  }

  get Cursor(): typeof SqlStorageCursor {
    return this.inner.Cursor;
  }

  get Statement(): typeof SqlStorageStatement {
    return this.inner.Statement;
  }

  /** The tallies so far, then zeroes them. */
  take(): { inside: SqlTally; outside: SqlTally } {
    for (const { cursor, inCommit } of this.cursors) (inCommit ? this.inside : this.outside).rowsRead += cursor.rowsRead;
    this.cursors = [];
    const taken = { inside: this.inside, outside: this.outside };
    this.inside = zeroTally();
    this.outside = zeroTally();
    return taken;
  }
}

/** The Storage port, delegated, with every commit logged. */
export class CountingStorage extends ForwardingStorage {
  private log: CommitRecord[] = [];

  constructor(
    inner: Storage,
    private readonly tap: SqlTap,
  ) {
    super(inner);
  }

  override commit(writes: readonly Write[]): CommitResult {
    this.tap.inCommit = true;
    try {
      const result = this.inner.commit(writes);
      this.log.push({ writes: [...writes], at: Date.now(), result });
      return result;
    } finally {
      this.tap.inCommit = false;
    }
  }

  /** The commits logged so far, then clears the log. */
  take(): CommitRecord[] {
    const taken = this.log;
    this.log = [];
    return taken;
  }
}

export interface BenchEngine {
  session: Session;
  storage: CountingStorage;
  tap: SqlTap;
  harness: AgentHarness;
  /** Alarm calls the DueWork schedule made (counted, not armed). */
  alarms: { set: number; deleted: number };
}

export const ECHO: ModelIdentity = { provider: "scripted", modelId: "echo" };
export const SCRIPT: ModelIdentity = { provider: "scripted", modelId: "script" };

/**
 * A harness over the object's stored session (created by the `create` RPC), built like
 * SessionRuntime builds it: scripted models with the session's step source, DueWork as the wake
 * scheduler. Call inside runInDurableObject.
 */
export async function openBenchEngine(
  state: DurableObjectState,
  model: ModelIdentity = ECHO,
  /** Window and output limit the scripted models report instead of their own (a smaller model). */
  limits?: { contextWindow: number; maxTokens: number },
): Promise<BenchEngine> {
  const tap = new SqlTap(state.storage.sql);
  const host: SqlHost = { sql: tap, transactionSync: (closure) => state.storage.transactionSync(closure) };
  const stored = SqlSessionStorage.open(host);
  if (!stored) throw new Error("no session stored in this object: create it first");
  const storage = new CountingStorage(stored, tap);
  const session = new Session(storage);
  const alarms = { set: 0, deleted: 0 };
  const alarmHost: AlarmHost = {
    sql: tap,
    setAlarm: async () => {
      alarms.set++;
    },
    deleteAlarm: async () => {
      alarms.deleted++;
    },
    getAlarm: async () => null,
  };
  const registry = createModelRegistry({ scripted: true, scriptSource: () => new SessionScriptSource(session) });
  const models: ModelsPort = limits
    ? {
        getModel: (provider, modelId) => {
          const found = registry.getModel(provider, modelId);
          return found && { ...found, ...limits };
        },
        streamSimple: (target, context, options) => registry.streamSimple(target, context, options),
        streamDeferred: (target, handle, options) => registry.streamDeferred(target, handle, options),
        cancelDeferred: (target, handle, options) => registry.cancelDeferred(target, handle, options),
      }
    : registry;
  // The hosted object forwards each settlement's outbox row to its tenant right after the commit
  // and deletes it, once acknowledged, inside the next turn's first commit; here the tenant is not
  // called, but the row is acknowledged the same way (after the commit), so the per-turn counts
  // include its deletion.
  const wake: DueWork = new DueWork(alarmHost, Date.now, () => {
    queueMicrotask(() => wake.outbox.acknowledge(wake.outbox.pending(FORWARD_BATCH).map((row) => row.operation_id)));
  });
  const { harness } = await AgentHarness.create({ session, models, seed: { model }, wake });
  return { session, storage, tap, harness, alarms };
}

/** One prompt → stop turn; fails the bench unless it completed. */
export async function completedTurn(lane: AgentLane, prompt: string): Promise<OperationResultRecord> {
  const outcome = await lane.prompt(prompt);
  if (!outcome.ok) throw new Error(`prompt refused: ${JSON.stringify(outcome.error)}`);
  const record = outcome.value;
  if (!("kind" in record)) throw new Error("the run suspended instead of settling");
  if (record.status !== "completed") throw new Error(`the run ended ${record.status}: ${JSON.stringify(record.error)}`);
  return record;
}

/** Lets detached work of a settled turn (chained writes, event delivery) finish. */
export function settle(ms = 5): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Sizes of writes (P3). The estimate counts what a write asks SQLite to keep: its payload exactly as
// the adapter encodes it, the text columns that address it, and a fixed per-row overhead.

/**
 * Fixed bytes per row written, on top of payload and address text: the integer columns (seq, ts,
 * chunks, parent_seq: up to 8 bytes each) and SQLite's record header, cell pointer and rowid varint.
 * Index entries are not in the estimate (SqlTap's rowsWritten counts them).
 */
export const ROW_OVERHEAD_BYTES = 32;

/** UTF-8 bytes of the payload the adapter stores for this write (0 for a delete). */
export function payloadBytes(write: Write): number {
  // The write is measured as it is committed, so its commit time is now (a message's timestamp is
  // stored as its distance from it).
  const encoded = encodePayloadOf(write, Date.now());
  if (encoded.chunks) return encoded.chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0);
  return encoded.inline === null ? 0 : utf8Bytes(encoded.inline);
}

/** Bytes of an id as stored: 16 for a canonical UUID, its UTF-8 text otherwise (stored-ids.ts). */
function idBytes(id: string): number {
  const stored = storedId(id);
  return typeof stored === "string" ? utf8Bytes(stored) : stored.byteLength;
}

/**
 * UTF-8 bytes of the text columns that address the row: entry id, type and custom type (the parent
 * is an integer link); usage id and entry id; namespace and key (an operation record's row in
 * `op_results` has its key alone).
 */
export function addressBytes(write: Write): number {
  switch (write.kind) {
    case "entry": {
      const { entry } = write;
      return idBytes(entry.id) + utf8Bytes(entry.type) + (entry.type === "custom" ? utf8Bytes(entry.customType) : 0);
    }
    case "usage":
      return idBytes(write.row.id) + (write.row.entryId === undefined ? 0 : idBytes(write.row.entryId));
    case "value":
      return (write.namespace === RESULTS_NAMESPACE ? 0 : utf8Bytes(write.namespace)) + utf8Bytes(write.key);
    case "list":
      return utf8Bytes(write.namespace) + utf8Bytes(write.key);
  }
}

/** The estimate for one write: payload + address + ROW_OVERHEAD_BYTES. */
export function estimatedBytes(write: Write): number {
  return payloadBytes(write) + addressBytes(write) + ROW_OVERHEAD_BYTES;
}

/**
 * The session row a commit rewrites besides its writes, amortized: the `counters` checkpoint (seq
 * limit, message count, the seq counted through, and the usage totals) is stored once per
 * UNSTORED_USAGE_ROWS_MAX ledger rows (sql-session-storage.ts), so each ledger row a commit adds
 * carries that share of it.
 */
export function sessionRowBytes(commit: { writes: readonly Write[]; result: CommitResult }): number {
  const ledgerRows = commit.writes.filter((write) => write.kind === "usage").length;
  if (ledgerRows === 0) return 0;
  // The totals column as the adapter stores it (sparse, usage-codec.ts).
  const row = 3 * 8 + utf8Bytes(JSON.stringify(sparseUsage(commit.result.stats.usage))) + ROW_OVERHEAD_BYTES;
  return (row * ledgerRows) / UNSTORED_USAGE_ROWS_MAX;
}

/** The entries' own payload: the JSON of each message an entry write carries. */
export function messagePayloadBytes(write: Write): number {
  return write.kind === "entry" && write.entry.type === "message" ? utf8Bytes(JSON.stringify(write.entry.message)) : 0;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** A short label for a write: kind, address (ids shortened to `<id>`), payload size. */
export function describeWrite(write: Write): string {
  const size = payloadBytes(write);
  const bytes = size > 0 ? ` (${size} B)` : "";
  switch (write.kind) {
    case "entry": {
      const { entry } = write;
      const what = entry.type === "message" ? `message/${entry.message.role}` : entry.type === "custom" ? `custom/${entry.customType}` : entry.type;
      return `insert entry ${what}${bytes}`;
    }
    case "usage":
      return `insert usage row${bytes}`;
    case "value": {
      const at = write.op === "set" ? stateAt(write.value) : undefined;
      const state = at === undefined ? "" : ` → ${at}`;
      return `${write.op === "set" ? "set" : "delete"} ${write.namespace}/${write.key.replace(UUID, "<id>")}${state}${bytes}`;
    }
    case "list":
      return `${write.op === "append" ? "append" : "delete list"} ${write.namespace}/${write.key.replace(UUID, "<id>")}${bytes}`;
  }
}

/** The `at` of an operation state value (`pi.op.state`), for the breakdown. */
function stateAt(stored: unknown): string | undefined {
  if (typeof stored !== "object" || stored === null) return undefined;
  const value = longOperationForm<{ at?: unknown; continuation?: unknown }>(stored);
  const { at } = value;
  if (typeof at !== "string") return undefined;
  const continuation = "continuation" in value ? value.continuation : undefined;
  const kind = typeof continuation === "object" && continuation !== null && "kind" in continuation ? continuation.kind : undefined;
  return typeof kind === "string" ? `${at}(${kind})` : at;
}
