import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { migrate, type Migration } from "../../durable-objects/sql/migrations.ts";
import { SESSION_MIGRATIONS } from "../../durable-objects/session/storage/session-migrations.ts";
import { SqlSessionStorage } from "../../durable-objects/session/storage/sql-session-storage.ts";
import { uuidv7Ids } from "../../harness/session/ids.ts";
import type { NewUsageRow } from "../../harness/session/storage.ts";
import type { NewEntry } from "../../schema/entries.ts";
import type { JsonValue } from "../../schema/json.ts";
import type { AgentMessage, AssistantMessage, UserMessage } from "../../schema/messages.ts";
import type { Usage } from "../../schema/usage.ts";

// Fresh SQLite-backed storages and entry builders for the storage-layer tests. Storage is shared by
// every test in a file, so each storage lives in its own uniquely named SessionObject.

let counter = 0;

export function uniqueObjectName(prefix = "storage"): string {
  return `tenant_test:${prefix}_${(counter++).toString(36)}_${crypto.randomUUID().slice(0, 8)}`;
}

export function objectStub(name: string) {
  return env.SESSIONS.getByName(name);
}

/** Runs `body` against a fresh session storage in a fresh object (optionally with a fixed clock). */
export async function withStorage<R>(
  body: (storage: SqlSessionStorage, state: DurableObjectState) => R | Promise<R>,
  options: { name?: string; clock?: () => number } = {},
): Promise<R> {
  const stub = objectStub(options.name ?? uniqueObjectName());
  return runInDurableObject(stub, (_instance, state) => {
    // A session's object gets its schema when the session is created (sql/lazy-schema.ts).
    migrate(state.storage, SESSION_MIGRATIONS);
    const storage = SqlSessionStorage.create(state.storage, { id: "s", tenantId: "t", createdAt: 1 }, options.clock);
    return body(storage, state);
  });
}

export const newId = (): string => uuidv7Ids.next();

/**
 * Runs one migration of an applied list again, by name, over rows written as an earlier build left
 * them: how a test shows what that migration does to them. (Taking its version row out of the
 * history would not do: `migrate` applies what follows the recorded prefix, so it would run the
 * list's last migrations again, not this one.)
 */
export function rerunMigration(host: Pick<DurableObjectStorage, "sql" | "transactionSync">, migrations: readonly Migration[], name: string): void {
  const migration = migrations.find((candidate) => candidate.name === name);
  if (!migration) throw new Error(`No migration ${name}`);
  host.transactionSync(() => {
    for (const statement of migration.statements) host.sql.exec(statement);
  });
}

export function userMessage(content = "hi"): UserMessage {
  return { role: "user", content, timestamp: 1 };
}

export function usageOf(fields: Partial<Omit<Usage, "cost">> = {}, cost: Partial<Usage["cost"]> = {}): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    ...fields,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0, ...cost },
  };
}

export function assistantMessage(text = "hello", usage: Usage = usageOf()): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "scripted",
    provider: "scripted",
    model: "scripted-1",
    usage,
    stopReason: "stop",
    timestamp: 2,
  };
}

export function messageEntry(parentId: string | null, message: AgentMessage = userMessage(), id = newId()): NewEntry {
  return { id, parentId, type: "message", message };
}

export function customEntry(parentId: string | null, customType: string, data?: JsonValue, id = newId()): NewEntry {
  return data === undefined ? { id, parentId, type: "custom", customType } : { id, parentId, type: "custom", customType, data };
}

export function compactionEntry(parentId: string | null, summary = "summary", id = newId()): NewEntry {
  return { id, parentId, type: "compaction", summary, retainedTail: [], tokensBefore: 10, fromHook: false };
}

export function branchSummaryEntry(parentId: string | null, fromId: string | null = null, id = newId()): NewEntry {
  return { id, parentId, type: "branch_summary", fromId, summary: "elsewhere", fromHook: false };
}

export function usageRow(usage: Usage = usageOf(), extra: Partial<Omit<NewUsageRow, "usage">> = {}): NewUsageRow {
  return { id: newId(), adjustment: false, ...extra, usage };
}

export type TableName = "meta" | "entries" | "vals" | "op_results" | "list_items" | "usage" | "payload_chunks";

/** Every row of the session tables (chunk data as its length), for "nothing changed" checks. */
export function dumpTables(state: DurableObjectState): Record<TableName, unknown[]> {
  const sql = state.storage.sql;
  const rows = (query: string): unknown[] => sql.exec(query).toArray();
  return {
    meta: rows("SELECT * FROM meta"),
    entries: rows("SELECT * FROM entries ORDER BY seq"),
    vals: rows("SELECT * FROM vals ORDER BY namespace, key"),
    op_results: rows("SELECT * FROM op_results ORDER BY operation_id"),
    list_items: rows("SELECT * FROM list_items ORDER BY seq"),
    usage: rows("SELECT * FROM usage ORDER BY seq"),
    payload_chunks: rows("SELECT seq, idx, length(data) AS bytes FROM payload_chunks ORDER BY seq, idx"),
  };
}

/** Chunk rows whose seq names no entry, value or list element. */
export function orphanChunkCount(state: DurableObjectState): number {
  return state.storage.sql
    .exec<{ n: number }>(
      `SELECT COUNT(*) AS n FROM payload_chunks WHERE seq NOT IN
         (SELECT seq FROM entries UNION SELECT seq FROM vals UNION SELECT seq FROM list_items)`,
    )
    .one().n;
}

export function chunkRowCount(state: DurableObjectState, seq?: number): number {
  const cursor =
    seq === undefined
      ? state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM payload_chunks")
      : state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM payload_chunks WHERE seq = ?", seq);
  return cursor.one().n;
}

/** A small deterministic PRNG (mulberry32) so randomized sequences are reproducible. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
