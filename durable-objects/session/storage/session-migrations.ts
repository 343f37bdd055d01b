import type { Migration } from "../../sql/migrations.ts";
import { EFFECT_RECEIPT_STATEMENTS, IDEMPOTENCY_STATEMENTS } from "../../rpc/idempotency-table.ts";
import { isCanonicalUuidText, uuidBytes } from "./stored-ids.ts";

// Append-only (D5). Never edit an entry once it has shipped; add a new one.
//
// Every write gets a session-global seq. Entries and list items use it as their rowid, so a branch
// walk follows parent links by integer key (`parent_seq`). Payloads above the inline limit live in
// `payload_chunks`, keyed by the seq of the write that stored them.
/**
 * A replaced or deleted value's payload releases its chunks inside SQLite (session migration 4;
 * created again by migration 13, which rebuilds the table). The text is what migration 4 shipped.
 */
const VALS_RELEASE_CHUNKS = [
  `CREATE TRIGGER vals_release_chunks_on_update AFTER UPDATE OF seq ON vals
        WHEN old.chunks > 0 BEGIN DELETE FROM payload_chunks WHERE seq = old.seq; END`,
  `CREATE TRIGGER vals_release_chunks_on_delete AFTER DELETE ON vals
        WHEN old.chunks > 0 BEGIN DELETE FROM payload_chunks WHERE seq = old.seq; END`,
];

export const SESSION_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "session_store",
    statements: [
      `CREATE TABLE meta (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        session_id TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        storage_version INTEGER NOT NULL,
        parent_session_id TEXT,
        next_seq INTEGER NOT NULL,
        message_count INTEGER NOT NULL,
        usage TEXT NOT NULL
      )`,
      `CREATE TABLE entries (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        parent_id TEXT,
        parent_seq INTEGER,
        ts INTEGER NOT NULL,
        type TEXT NOT NULL,
        custom_type TEXT,
        chunks INTEGER NOT NULL DEFAULT 0,
        payload TEXT
      )`,
      "CREATE INDEX entries_by_type ON entries (type, custom_type, seq)",
      `CREATE TABLE vals (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        chunks INTEGER NOT NULL DEFAULT 0,
        value TEXT,
        PRIMARY KEY (namespace, key)
      )`,
      `CREATE TABLE list_items (
        seq INTEGER PRIMARY KEY,
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        chunks INTEGER NOT NULL DEFAULT 0,
        value TEXT
      )`,
      "CREATE INDEX list_items_by_key ON list_items (namespace, key, seq)",
      `CREATE TABLE usage (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        entry_id TEXT,
        adjustment INTEGER NOT NULL,
        payload TEXT NOT NULL
      )`,
      `CREATE TABLE payload_chunks (
        seq INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (seq, idx)
      )`,
    ],
  },
  {
    version: 2,
    name: "due_work",
    statements: [
      // Host-side schedule of drive passes (ARCHITECTURE D7), multiplexed onto the single alarm.
      // Written in the same synchronous turn as the session commit that made the work due.
      `CREATE TABLE due_work (
        operation_id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        due_at INTEGER NOT NULL
      )`,
      "CREATE INDEX due_work_by_time ON due_work (due_at)",
    ],
  },
  {
    version: 3,
    name: "idempotency",
    statements: IDEMPOTENCY_STATEMENTS,
  },
  {
    version: 4,
    name: "lean_commits",
    statements: [
      // Every commit advances the seq: keep that in a row of its own, a few bytes, so a commit no
      // longer rewrites the session's metadata and usage totals (QUALITY P3). The usage totals stay
      // in `meta` and change only with ledger rows.
      `CREATE TABLE counters (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        next_seq INTEGER NOT NULL,
        message_count INTEGER NOT NULL
      )`,
      "INSERT INTO counters (singleton, next_seq, message_count) SELECT 1, next_seq, message_count FROM meta",
      "ALTER TABLE meta DROP COLUMN next_seq",
      "ALTER TABLE meta DROP COLUMN message_count",
      // A replaced or deleted payload releases its chunks inside SQLite, instead of a DELETE
      // statement (and its lookup) before every value write, chunked or not.
      ...VALS_RELEASE_CHUNKS,
      `CREATE TRIGGER list_items_release_chunks_on_delete AFTER DELETE ON list_items
        WHEN old.chunks > 0 BEGIN DELETE FROM payload_chunks WHERE seq = old.seq; END`,
    ],
  },
  {
    version: 5,
    name: "settlement_outbox",
    statements: [
      // Settled operations not yet told to the tenant (session/due-work/settlement-outbox.ts): inserted in
      // the commit that settles the operation, deleted once the tenant has it. Every turn pays for
      // this row, so it stays tiny.
      `CREATE TABLE settlement_outbox (
        operation_id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        settled_at INTEGER NOT NULL,
        forward_at INTEGER NOT NULL
      )`,
    ],
  },
  {
    version: 6,
    name: "deferred_registrations",
    statements: [
      // Suspended runs not yet registered with their DeferredIndex shard
      // (session/due-work/deferred-registrations.ts): inserted in the commit that suspends the run, deleted
      // once the shard has it.
      `CREATE TABLE deferred_registrations (
        operation_id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        poll_at INTEGER NOT NULL,
        forward_at INTEGER NOT NULL
      )`,
    ],
  },
  {
    version: 7,
    name: "settlement_outbox_reservation",
    statements: [
      // The worker's open-operation reservation a prompt handed over (session/due-work/settlement-outbox.ts),
      // freed by the forward with the operation; written in the settling commit, so it survives
      // what the settlement survives.
      "ALTER TABLE settlement_outbox ADD COLUMN reservation_id TEXT",
    ],
  },
  {
    version: 8,
    name: "operation_results",
    statements: [
      // Every settled operation keeps one record forever (reference §3.8), so a simple turn pays
      // for it in retained bytes (QUALITY P3). In the values table it cost its namespace, a chunk
      // count and a second copy of its key in the primary-key index; here it is one row of one
      // b-tree keyed by the operation id. A record too large to stay inline keeps its chunks in
      // the values table (results-table.ts reads both).
      `CREATE TABLE op_results (
        operation_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        record TEXT NOT NULL
      ) WITHOUT ROWID`,
      `INSERT INTO op_results (operation_id, seq, record)
        SELECT key, seq, value FROM vals WHERE namespace = 'pi.result' AND chunks = 0 AND value IS NOT NULL`,
      "DELETE FROM vals WHERE namespace = 'pi.result' AND chunks = 0 AND value IS NOT NULL",
      // Scans by type look for the rare types (compactions, summaries, custom entries); messages,
      // two per simple turn, are most of the table and are found in seq order without the index.
      // Queries on another type say `type <> 'message'` so SQLite may use this partial index.
      "DROP INDEX entries_by_type",
      "CREATE INDEX entries_by_type ON entries (type, custom_type, seq) WHERE type <> 'message'",
    ],
  },
  {
    version: 9,
    name: "binary_ids",
    // Entry, ledger and result-record ids in canonical UUID text are stored as their 16 bytes
    // since QUALITY P3 (stored-ids.ts); lookups bind that form, so the text ids of earlier builds
    // are converted once, here. A parent's id text that earlier rows or fork imports hold stays
    // text: it is only read, never looked up.
    statements: [
      `UPDATE entries SET id = ${uuidBytes("id")} WHERE ${isCanonicalUuidText("id")}`,
      `UPDATE usage SET id = ${uuidBytes("id")} WHERE ${isCanonicalUuidText("id")}`,
      `UPDATE usage SET entry_id = ${uuidBytes("entry_id")} WHERE ${isCanonicalUuidText("entry_id")}`,
      `UPDATE op_results SET operation_id = ${uuidBytes("operation_id")} WHERE ${isCanonicalUuidText("operation_id")}`,
    ],
  },
  {
    version: 10,
    name: "binary_schedule_ids",
    // Every turn inserts and deletes a due_work row and a settlement_outbox row keyed by its
    // operation id (QUALITY P3, bytes written): those keys are stored as the ids above are, and
    // rows an earlier build left pending are converted so that their lookups still match.
    statements: [
      `UPDATE due_work SET operation_id = ${uuidBytes("operation_id")} WHERE ${isCanonicalUuidText("operation_id")}`,
      `UPDATE settlement_outbox SET operation_id = ${uuidBytes("operation_id")} WHERE ${isCanonicalUuidText("operation_id")}`,
    ],
  },
  {
    version: 11,
    name: "deferred_unregistrations",
    // A suspended run leaves its DeferredIndex shard when it settles (ARCHITECTURE D8), through
    // the same outbox as its registration (session/due-work/deferred-registrations.ts): a forwarded
    // registration is kept (`forwarded`) so the settling commit knows to turn it into a removal
    // (`unregister`), which is deleted once the shard has it. Rows of earlier builds are
    // registrations not yet forwarded, as the defaults say.
    statements: [
      "ALTER TABLE deferred_registrations ADD COLUMN unregister INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE deferred_registrations ADD COLUMN forwarded INTEGER NOT NULL DEFAULT 0",
    ],
  },
  {
    version: 12,
    name: "usage_forward",
    // The usage-ledger seq up to which the tenant acknowledged this session's usage
    // (session/due-work/usage-outbox.ts): later rows are forwarded, at least once, and `retry_at` brings
    // the alarm back after a failed forward. Rows of earlier builds were already told to the
    // tenant (at most once), so the mark starts past them.
    statements: [
      `CREATE TABLE usage_forward (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        forwarded_seq INTEGER NOT NULL,
        retry_at INTEGER
      )`,
      "INSERT INTO usage_forward (singleton, forwarded_seq) SELECT 1, COALESCE(MAX(seq), 0) FROM usage",
    ],
  },
  {
    version: 13,
    name: "keyed_tables",
    // SQLite writes a rowid table's row and, separately, the index that enforces its primary key:
    // an insert into `vals`, `due_work` or `settlement_outbox` counted as two rows written (three
    // with `due_work_by_time`), and rows written are most of a turn's bill (QUALITY P12). Keyed by
    // their primary key alone (WITHOUT ROWID, like `op_results`), an insert is one row. The
    // schedule tables hold one row per open operation or unacknowledged settlement, so finding the
    // earliest reads a handful of rows without an index on time.
    statements: [
      `CREATE TABLE vals_keyed (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        chunks INTEGER NOT NULL DEFAULT 0,
        value TEXT,
        PRIMARY KEY (namespace, key)
      ) WITHOUT ROWID`,
      "INSERT INTO vals_keyed (namespace, key, seq, chunks, value) SELECT namespace, key, seq, chunks, value FROM vals",
      // Dropping the table drops its triggers (no row is deleted, so no chunk is released).
      "DROP TABLE vals",
      "ALTER TABLE vals_keyed RENAME TO vals",
      ...VALS_RELEASE_CHUNKS,
      `CREATE TABLE due_work_keyed (
        operation_id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        due_at INTEGER NOT NULL
      ) WITHOUT ROWID`,
      "INSERT INTO due_work_keyed (operation_id, lane, due_at) SELECT operation_id, lane, due_at FROM due_work",
      "DROP TABLE due_work",
      "ALTER TABLE due_work_keyed RENAME TO due_work",
      `CREATE TABLE settlement_outbox_keyed (
        operation_id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        settled_at INTEGER NOT NULL,
        forward_at INTEGER NOT NULL,
        reservation_id TEXT
      ) WITHOUT ROWID`,
      `INSERT INTO settlement_outbox_keyed (operation_id, lane, settled_at, forward_at, reservation_id)
        SELECT operation_id, lane, settled_at, forward_at, reservation_id FROM settlement_outbox`,
      "DROP TABLE settlement_outbox",
      "ALTER TABLE settlement_outbox_keyed RENAME TO settlement_outbox",
    ],
  },
  {
    version: 14,
    name: "counters_checkpoint",
    // The counters row is no longer rewritten by every commit (sql-session-storage.ts): `next_seq`
    // is a limit every seq in use stays below, moved ahead in steps; `message_count` counts the
    // messages up to `counted_through`, and opening counts the few after it; the usage totals
    // move here from `meta`, so the commit that adds a ledger row rewrites one row, not two.
    statements: [
      "ALTER TABLE counters ADD COLUMN counted_through INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE counters ADD COLUMN usage TEXT NOT NULL DEFAULT '{}'",
      "UPDATE counters SET counted_through = next_seq - 1, usage = (SELECT usage FROM meta WHERE singleton = 1)",
      "ALTER TABLE meta DROP COLUMN usage",
    ],
  },
  {
    version: 15,
    name: "schedules",
    // A lane's schedules (durable-objects/session/schedules/), the due times they reached (the
    // newest MAX_SCHEDULE_RUNS_KEPT per schedule) and their registrations with the DeferredIndex
    // shard the cron's safety net and the tenant-wide listing read (forwarded after their commit).
    statements: [
      `CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        lane TEXT NOT NULL,
        timing TEXT NOT NULL,
        timezone TEXT NOT NULL,
        anchor INTEGER NOT NULL,
        prompt TEXT NOT NULL,
        if_busy TEXT NOT NULL,
        paused INTEGER NOT NULL,
        next_run_at INTEGER,
        retry_at INTEGER,
        last_run TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        body_hash TEXT NOT NULL
      )`,
      "CREATE INDEX schedules_lane ON schedules (lane, id)",
      "CREATE INDEX schedules_due ON schedules (COALESCE(retry_at, next_run_at)) WHERE paused = 0 AND next_run_at IS NOT NULL",
      `CREATE TABLE schedule_runs (
        schedule_id TEXT NOT NULL,
        due_at INTEGER NOT NULL,
        fired_at INTEGER NOT NULL,
        operation_id TEXT,
        skipped TEXT,
        detail TEXT,
        coalesced INTEGER NOT NULL,
        PRIMARY KEY (schedule_id, due_at)
      ) WITHOUT ROWID`,
      `CREATE TABLE schedule_registrations (
        schedule_id TEXT PRIMARY KEY,
        removal INTEGER NOT NULL,
        forward_at INTEGER NOT NULL,
        version INTEGER NOT NULL
      )`,
    ],
  },
  {
    version: 16,
    name: "effect_receipts",
    statements: EFFECT_RECEIPT_STATEMENTS,
  },
];
