import type { StorageTally } from "./tally.ts";

const tally: StorageTally = { sqlStatements: 0, rowsWritten: 0, boundBytes: 0, rowsRead: 0, kvWrites: 0, kvBytes: 0, socketMessages: 0, alarms: 0 };
/**
 * The latest statement's cursor: its rowsRead grows while it is consumed, so it is added when the
 * next statement runs or the tally is read (the SDK consumes its cursors at once).
 */
let lastCursor: SqlStorageCursor<Record<string, SqlStorageValue>> | undefined;

function settleLastCursor(): void {
  if (lastCursor) tally.rowsRead += lastCursor.rowsRead;
  lastCursor = undefined;
}
const WRITE_STATEMENT = /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i;
const encoder = new TextEncoder();
let installed = false;
/** Rows written by statement (its text, whitespace folded): where a turn's rows go. */
const rowsByStatement = new Map<string, number>();

function bytesOf(value: unknown): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === "string") return encoder.encode(value).byteLength;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") return 8;
  if (value instanceof ArrayBuffer) return value.byteLength;
  if (ArrayBuffer.isView(value)) return value.byteLength;
  return encoder.encode(JSON.stringify(value)).byteLength;
}

/**
 * Wraps the prototypes of this isolate's SQL storage and storage objects, so every caller (the SDK
 * reaches `ctx.storage.sql` from several modules) is counted. Bench only: the peer never deploys.
 */
export function installStorageTally(storage: DurableObjectStorage): void {
  if (installed) return;
  installed = true;
  const sqlPrototype: SqlStorage = Object.getPrototypeOf(storage.sql);
  const exec = sqlPrototype.exec;
  sqlPrototype.exec = function tallied<T extends Record<string, SqlStorageValue>>(this: SqlStorage, query: string, ...bindings: unknown[]): SqlStorageCursor<T> {
    settleLastCursor();
    const cursor = exec.call(this, query, ...bindings) as SqlStorageCursor<T>;
    lastCursor = cursor;
    if (WRITE_STATEMENT.test(query)) {
      tally.sqlStatements++;
      tally.boundBytes += bindings.reduce<number>((sum, value) => sum + bytesOf(value), 0);
      tally.rowsWritten += cursor.rowsWritten;
      if (cursor.rowsWritten > 0) {
        const statement = query.replace(/\s+/g, " ").trim();
        rowsByStatement.set(statement, (rowsByStatement.get(statement) ?? 0) + cursor.rowsWritten);
      }
    }
    return cursor;
  };
  const storagePrototype: DurableObjectStorage = Object.getPrototypeOf(storage);
  const put = storagePrototype.put;
  const remove = storagePrototype.delete;
  storagePrototype.put = function talliedPut(this: DurableObjectStorage, ...args: unknown[]) {
    const [first, second] = args;
    if (typeof first === "string") {
      tally.kvWrites++;
      tally.kvBytes += bytesOf(first) + bytesOf(second);
    } else if (first && typeof first === "object") {
      for (const [key, value] of Object.entries(first)) {
        tally.kvWrites++;
        tally.kvBytes += bytesOf(key) + bytesOf(value);
      }
    }
    return Reflect.apply(put, this, args);
  } as DurableObjectStorage["put"];
  storagePrototype.delete = function talliedDelete(this: DurableObjectStorage, ...args: unknown[]) {
    const [keys] = args;
    tally.kvWrites += Array.isArray(keys) ? keys.length : 1;
    return Reflect.apply(remove, this, args);
  } as DurableObjectStorage["delete"];
}

/**
 * Counts the billed invocations of an agent that are not HTTP requests: incoming WebSocket messages
 * and alarms. The SDK's lifecycle installs `webSocketMessage` on the agent instance itself (an own
 * property, in the Agent constructor) while `alarm` is a prototype method, so each is wrapped where
 * the platform finds it. Call after `super()`. Bench only, like the storage tally.
 */
export function countInvocations(agent: object): void {
  for (const [name, field] of [["webSocketMessage", "socketMessages"], ["alarm", "alarms"]] as const) {
    const owner: object = Object.prototype.hasOwnProperty.call(agent, name) ? agent : Object.getPrototypeOf(agent);
    const original: unknown = Reflect.get(owner, name);
    if (typeof original !== "function") throw new Error(`the agent has no ${name} handler to count`);
    if (Reflect.get(original, "counted") === true) continue;
    const counted = function (this: unknown, ...args: unknown[]): unknown {
      tally[field]++;
      return Reflect.apply(original, this, args);
    };
    Reflect.set(counted, "counted", true);
    Object.defineProperty(owner, name, { value: counted, configurable: true, writable: true });
  }
}

export function storageTally(): StorageTally {
  settleLastCursor();
  return { ...tally };
}

/** Rows written so far by each statement that wrote any (bench breakdowns; compare two snapshots). */
export function rowsWrittenByStatement(): Map<string, number> {
  return new Map(rowsByStatement);
}
