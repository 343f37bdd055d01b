import type { Migration } from "../sql/migrations.ts";
import { EFFECT_RECEIPT_STATEMENTS, IDEMPOTENCY_STATEMENTS } from "../rpc/idempotency-table.ts";

// Append-only (D5): the TenantObject's tables.
export const TENANT_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "tenant_store",
    statements: [
      `CREATE TABLE tenant (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      // Only SHA-256 hashes of keys are stored; the key itself is shown once (D17).
      `CREATE TABLE api_keys (
        key_id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      )`,
      `CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL
      )`,
      "CREATE INDEX sessions_by_time ON sessions (created_at, session_id)",
    ],
  },
  {
    version: 2,
    name: "idempotency",
    statements: IDEMPOTENCY_STATEMENTS,
  },
  {
    version: 3,
    name: "quotas",
    statements: [
      // Per-tenant quotas (null: the service default) and the current one-minute request window.
      "ALTER TABLE tenant ADD COLUMN requests_per_minute INTEGER",
      `CREATE TABLE request_window (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        window_start INTEGER NOT NULL,
        count INTEGER NOT NULL
      )`,
    ],
  },
  {
    version: 4,
    name: "open_operations_and_usage",
    statements: [
      // The tenant's concurrent open operations quota (null: the service default).
      "ALTER TABLE tenant ADD COLUMN max_open_operations INTEGER",
      // A row per open operation: keyed by a reservation id until bound to the operation id.
      `CREATE TABLE open_operations (
        operation_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        lane TEXT NOT NULL,
        reserved_at INTEGER NOT NULL,
        bound INTEGER NOT NULL DEFAULT 0
      )`,
      // Releases that arrived before their bind (the operation settled first); pruned after minutes.
      `CREATE TABLE released_operations (
        operation_id TEXT PRIMARY KEY,
        released_at INTEGER NOT NULL
      )`,
      `CREATE TABLE usage_totals (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        totals TEXT NOT NULL
      )`,
    ],
  },
  {
    version: 5,
    name: "listing_index_and_directory",
    statements: [
      // What a session listing shows, kept here so that a listing touches this object only.
      "ALTER TABLE sessions ADD COLUMN name TEXT",
      // Recorded at most once a minute per key, inside the call that already counts the request.
      "ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER",
      "CREATE INDEX api_keys_by_time ON api_keys (created_at, key_id)",
      // Only the directory object (named "admin:directory") fills this: the admin's tenant list.
      `CREATE TABLE tenant_directory (
        tenant_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      "CREATE INDEX tenant_directory_by_time ON tenant_directory (created_at, tenant_id)",
      // When a refused reservation last asked sessions about their operations (healing is rare).
      `CREATE TABLE operation_heal (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        last_heal_at INTEGER NOT NULL
      )`,
    ],
  },
  {
    version: 6,
    name: "watch_registrations",
    statements: [
      // Where each key has watch sockets open, so revoking it can close them (tenant-watches.ts).
      `CREATE TABLE watch_registrations (
        key_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        registered_at INTEGER NOT NULL,
        PRIMARY KEY (key_id, session_id)
      )`,
      "CREATE INDEX watch_registrations_by_time ON watch_registrations (registered_at)",
    ],
  },
  {
    version: 7,
    name: "provider_keys",
    statements: [
      // The tenant's own provider keys, sealed (secrets/secret-box.ts), never stored in plain text;
      // the hint (last four characters) is what listings show.
      `CREATE TABLE provider_keys (
        provider TEXT PRIMARY KEY,
        sealed TEXT NOT NULL,
        key_hint TEXT NOT NULL,
        base_url TEXT,
        updated_at INTEGER NOT NULL
      )`,
      // Whether the tenant may use the deployment's provider keys (null: the default, allowed).
      "ALTER TABLE tenant ADD COLUMN deployment_keys INTEGER",
    ],
  },
  {
    version: 8,
    name: "default_model",
    statements: [
      // The tenant's default model of new lanes, `{ provider, modelId }` as JSON (null: none).
      "ALTER TABLE tenant ADD COLUMN default_model TEXT",
    ],
  },
  {
    version: 9,
    name: "webhooks",
    statements: [
      // The tenant's webhook endpoints (webhooks/tenant-webhooks.ts); the signing secret only sealed.
      `CREATE TABLE webhook_endpoints (
        endpoint_id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        sealed_secret TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      "CREATE INDEX webhook_endpoints_by_time ON webhook_endpoints (created_at, endpoint_id)",
      // The durable outbox and delivery log: one row per endpoint and event, keyed so that a
      // repeated forward of the same event enqueues nothing twice.
      `CREATE TABLE webhook_deliveries (
        endpoint_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_status_code INTEGER,
        last_error TEXT,
        next_attempt_at INTEGER,
        created_at INTEGER NOT NULL,
        first_attempt_at INTEGER,
        last_attempt_at INTEGER,
        delivered_at INTEGER,
        PRIMARY KEY (endpoint_id, event_id)
      )`,
      "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)",
      "CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (endpoint_id, created_at, event_id)",
    ],
  },
  {
    version: 10,
    name: "reservations_in_memory",
    statements: [
      // Reservations of accepts in flight are held in memory now and written only when bound
      // (tenant/pending-reservations.ts); unbound rows of earlier builds are dropped once, as a
      // restart forgets the accepts in flight (their binds then find nothing to bind).
      "DELETE FROM open_operations WHERE bound = 0",
    ],
  },
  {
    version: 11,
    name: "webhook_endpoint_health",
    statements: [
      // An endpoint's run of failed attempts since its last success (webhooks/webhook-endpoints.ts), and
      // whether (and why) it is disabled: past the limits of webhooks/webhook-schedule.ts it is sent nothing.
      "ALTER TABLE webhook_endpoints ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE webhook_endpoints ADD COLUMN failing_since INTEGER",
      "ALTER TABLE webhook_endpoints ADD COLUMN disabled_at INTEGER",
      "ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason TEXT",
      // The alarm reads each endpoint's due deliveries on their own (one endpoint is sent one at a time).
      "CREATE INDEX webhook_deliveries_due_by_endpoint ON webhook_deliveries (endpoint_id, status, next_attempt_at)",
    ],
  },
  {
    version: 12,
    name: "webhook_event_ids",
    statements: [
      // Ids of the webhook events enqueued, kept longer than a session may repeat a forward
      // (webhooks/webhook-event-ids.ts), so a repeat never enqueues an event twice once its
      // delivery left the log.
      `CREATE TABLE webhook_event_ids (
        event_id TEXT PRIMARY KEY,
        enqueued_at INTEGER NOT NULL
      ) WITHOUT ROWID`,
      "CREATE INDEX webhook_event_ids_by_time ON webhook_event_ids (enqueued_at)",
    ],
  },
  {
    version: 13,
    name: "session_usage_marks",
    statements: [
      // Per session, the seq of the last usage-ledger row added to the totals
      // (tenant/session-usage-marks.ts): sessions forward rows at least once, each is added once.
      `CREATE TABLE session_usage_marks (
        session_id TEXT PRIMARY KEY,
        epoch INTEGER NOT NULL,
        seq INTEGER NOT NULL
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 14,
    name: "agents",
    statements: [
      // Agents (tenant/agent-store.ts): one row per agent, live or deleted (a deleted agent's id
      // is not reused and its versions stay readable), and one immutable row per version holding
      // that version's definition as JSON text.
      `CREATE TABLE agents (
        agent_id TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL,
        latest_version INTEGER NOT NULL,
        deleted_at INTEGER
      ) WITHOUT ROWID`,
      // Listings and the live count read only live agents, in creation order.
      "CREATE INDEX agents_live_by_time ON agents (created_at, agent_id) WHERE deleted_at IS NULL",
      `CREATE TABLE agent_versions (
        agent_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        definition TEXT NOT NULL,
        PRIMARY KEY (agent_id, version)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 15,
    name: "session_metadata_index",
    statements: [
      // What a listing shows of each session's metadata (JSON of the map, null: none), and the seq
      // of the session's write it reflects: of two concurrent patches the index keeps the newer.
      "ALTER TABLE sessions ADD COLUMN metadata TEXT",
      "ALTER TABLE sessions ADD COLUMN metadata_seq INTEGER NOT NULL DEFAULT 0",
      // One row per metadata pair of each session, in creation order within a pair: a search by
      // one pair reads only the rows of its page (tenant/session-search.ts). A row is removed by
      // its whole key, which the session's row above holds, so no second index is kept.
      `CREATE TABLE session_metadata (
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        PRIMARY KEY (key, value, created_at, session_id)
      ) WITHOUT ROWID`,
    ],
  },
  {
    version: 16,
    name: "tenant_tools",
    statements: [
      // Tenant tools and MCP servers (tenant/tenant-revisions.ts), `kind` "tool" or "mcp": one row
      // per name, live or deleted (a deleted name created again continues its revision numbers),
      // and one immutable row per revision holding its stored definition as JSON (an http tool's
      // secret and an MCP server's headers sealed under the tenant's context).
      `CREATE TABLE tenant_tools (
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        latest_revision INTEGER NOT NULL,
        deleted_at INTEGER,
        PRIMARY KEY (kind, name)
      ) WITHOUT ROWID`,
      // Listings and the live count read only live names, in creation order.
      "CREATE INDEX tenant_tools_live_by_time ON tenant_tools (kind, created_at, name) WHERE deleted_at IS NULL",
      `CREATE TABLE tenant_tool_revisions (
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        revision INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        definition TEXT NOT NULL,
        PRIMARY KEY (kind, name, revision)
      ) WITHOUT ROWID`,
      // The tenant tools and MCP servers the latest version of each live agent names
      // (tenant/agent-pins.ts): what makes a DELETE 409 ToolInUse, read by name.
      `CREATE TABLE agent_tenant_refs (
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        PRIMARY KEY (kind, name, agent_id)
      ) WITHOUT ROWID`,
      "CREATE INDEX agent_tenant_refs_by_agent ON agent_tenant_refs (agent_id)",
    ],
  },
  {
    version: 17,
    name: "session_agent_index",
    statements: [
      // The agent version each session is bound to (null: none), shown by a listing, and an index
      // by agent in creation order: a search by agent reads only the rows of its page
      // (tenant/session-search.ts). Partial: sessions without an agent add no index row.
      "ALTER TABLE sessions ADD COLUMN agent_id TEXT",
      "ALTER TABLE sessions ADD COLUMN agent_version INTEGER",
      "CREATE INDEX sessions_by_agent ON sessions (agent_id, created_at, session_id) WHERE agent_id IS NOT NULL",
    ],
  },
  {
    version: 18,
    name: "usage_per_session",
    statements: [
      // Each session's usage sum moves with its mark (tenant/session-usage-marks.ts): a forward
      // rewrites one row, not the mark and the tenant's totals. `usage_totals` keeps what was
      // counted before and the sums of sessions deleted since; the totals add up both when read.
      "ALTER TABLE session_usage_marks ADD COLUMN usage TEXT",
    ],
  },
  {
    version: 19,
    name: "data_lifecycle",
    statements: [
      // Sessions waiting to be deleted in the background (tenant/session-deletions.ts): by a
      // DELETE by metadata, a retention sweep or the tenant's deletion. The queue is durable, so
      // an alarm that dies part-way resumes with what is left; listings hide queued sessions.
      // `idle_before`: queued by retention, for being idle since before then (a session active
      // again before its turn leaves the queue); null for a deletion asked for.
      `CREATE TABLE session_deletions (
        session_id TEXT PRIMARY KEY,
        queued_at INTEGER NOT NULL,
        idle_before INTEGER
      ) WITHOUT ROWID`,
      // A session's last activity (creation, a settled operation, a PATCH): what retention reads.
      "ALTER TABLE sessions ADD COLUMN last_active_at INTEGER",
      "UPDATE sessions SET last_active_at = created_at",
      "CREATE INDEX sessions_by_activity ON sessions (last_active_at)",
      // The tenant's deletion (when it began, how many sessions it deleted since) and its retention.
      "ALTER TABLE tenant ADD COLUMN deleting_at INTEGER",
      "ALTER TABLE tenant ADD COLUMN deletion_done INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE tenant ADD COLUMN session_retention_days INTEGER",
      // The admin directory: 'active', 'deleting', or 'deleted' (a tombstone keeping the id
      // reserved), and which tenants have a retention to sweep and when each was last swept.
      "ALTER TABLE tenant_directory ADD COLUMN status TEXT NOT NULL DEFAULT 'active'",
      "ALTER TABLE tenant_directory ADD COLUMN retention_days INTEGER",
      "ALTER TABLE tenant_directory ADD COLUMN retention_swept_at INTEGER",
      "CREATE INDEX tenant_directory_retention ON tenant_directory (retention_swept_at) WHERE retention_days IS NOT NULL",
    ],
  },
  {
    version: 20,
    name: "effect_receipts",
    statements: EFFECT_RECEIPT_STATEMENTS,
  },
  {
    version: 21,
    name: "session_index_order",
    statements: [
      // The seq of the session's write each indexed name and agent version reflects, as
      // `metadata_seq` does for the metadata: of two concurrent PATCHes the index keeps the newer
      // (0: as registered at creation, before any PATCH).
      "ALTER TABLE sessions ADD COLUMN name_seq INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE sessions ADD COLUMN agent_seq INTEGER NOT NULL DEFAULT 0",
    ],
  },
  {
    version: 22,
    name: "open_operations_per_session",
    statements: [
      // An operation id only has to be new within its session: two sessions may run operations
      // under one id, and each holds its own slot. The ledger and its release tombstones are keyed
      // by (session, operation id). Old tombstones name no session and live minutes: they go.
      `CREATE TABLE open_operations_by_session (
        session_id TEXT NOT NULL,
        operation_id TEXT NOT NULL,
        lane TEXT NOT NULL,
        reserved_at INTEGER NOT NULL,
        bound INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (session_id, operation_id)
      ) WITHOUT ROWID`,
      "INSERT INTO open_operations_by_session (session_id, operation_id, lane, reserved_at, bound) SELECT session_id, operation_id, lane, reserved_at, bound FROM open_operations",
      "DROP TABLE open_operations",
      "ALTER TABLE open_operations_by_session RENAME TO open_operations",
      "DROP TABLE released_operations",
      `CREATE TABLE released_operations (
        session_id TEXT NOT NULL,
        operation_id TEXT NOT NULL,
        released_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, operation_id)
      ) WITHOUT ROWID`,
      "CREATE INDEX released_operations_by_time ON released_operations (released_at)",
    ],
  },
  {
    version: 23,
    name: "schedule_claims",
    statements: [
      // The tenant's schedules quota (null: the service default, schedule-claims.ts).
      "ALTER TABLE tenant ADD COLUMN max_schedules INTEGER",
      // One row per schedule of the tenant's sessions: pending (until a time) from its creation's
      // claim, held (null) once the session's registration forward arrived.
      `CREATE TABLE schedule_claims (
        session_id TEXT NOT NULL,
        schedule_id TEXT NOT NULL,
        pending_until INTEGER,
        PRIMARY KEY (session_id, schedule_id)
      ) WITHOUT ROWID`,
      "CREATE INDEX schedule_claims_pending ON schedule_claims (pending_until) WHERE pending_until IS NOT NULL",
    ],
  },
];
