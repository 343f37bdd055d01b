import type { ForkDataPage, ForkEntryPage, ForkPlan, ForkValue } from "./fork-source.ts";
import { encodePayloadText, writeChunks } from "./payload-codec.ts";
import { storedId } from "./stored-ids.ts";
import type { SqlHost } from "../../sql/sql-host.ts";
import { STORAGE_VERSION, insertCounters } from "./sql-session-storage.ts";

// The destination half of a fork (reference §1.11). Rows keep their source seqs (entry ids and
// seqs are the source's; every source seq is unique across tables, so chunks never collide), and
// the session metadata is written last, in the same transaction as the tips and lanes: until
// then the object holds no session (every call answers SessionNotFound), and an interrupted copy
// is cleared and restarted by the next attempt.

/** Progress of one import, kept in memory by the destination while it pulls pages. */
export interface ForkImport {
  maxSeq: number;
  messages: number;
}

/** Clears what an interrupted earlier attempt left; only for an object without a session. */
export function beginForkImport(host: SqlHost, plan: Pick<ForkPlan, "highWater">): ForkImport {
  clearSessionData(host);
  return { maxSeq: plan.highWater, messages: 0 };
}

/**
 * Empties the tables a session's data lives in, in an object that holds no session: what a fork
 * that failed part-way had copied (its pages are committed one by one) must not become part of a
 * session created there later, nor collide with its seqs.
 */
export function clearSessionData(host: SqlHost): void {
  host.transactionSync(() => {
    for (const table of ["entries", "vals", "list_items", "payload_chunks", "usage"]) host.sql.exec(`DELETE FROM ${table}`);
  });
}

export function importEntryPage(host: SqlHost, progress: ForkImport, page: ForkEntryPage): void {
  host.transactionSync(() => {
    for (const row of page.rows) {
      const payload = row.json === null ? { inline: null, chunks: null } : encodePayloadText(row.json);
      host.sql.exec(
        `INSERT INTO entries (seq, id, parent_id, parent_seq, ts, type, custom_type, chunks, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        row.seq,
        storedId(row.id),
        row.parentId,
        row.parentSeq,
        row.ts,
        row.type,
        row.customType,
        payload.chunks?.length ?? 0,
        payload.inline,
      );
      if (payload.chunks) writeChunks(host, row.seq, payload.chunks);
      if (row.type === "message") progress.messages++;
      progress.maxSeq = Math.max(progress.maxSeq, row.seq);
    }
    for (const label of page.labels) writeValue(host, progress, label, label.seq);
  });
}

export function importDataPage(host: SqlHost, progress: ForkImport, page: ForkDataPage): void {
  host.transactionSync(() => {
    for (const value of page.values) writeValue(host, progress, value, value.seq);
    for (const item of page.items) {
      const payload = encodePayloadText(item.json);
      host.sql.exec("INSERT INTO list_items (seq, namespace, key, chunks, value) VALUES (?, ?, ?, ?, ?)", item.seq, item.namespace, item.key, payload.chunks?.length ?? 0, payload.inline);
      if (payload.chunks) writeChunks(host, item.seq, payload.chunks);
      progress.maxSeq = Math.max(progress.maxSeq, item.seq);
    }
  });
}

/**
 * The last step, one transaction: session values, tips, lane configurations with fresh idle lane
 * states, then the metadata and counters that make the session exist. The usage ledger restarts
 * at zero; the next seq follows the highest copied one.
 */
export function finishForkImport(
  host: SqlHost,
  progress: ForkImport,
  /** A session import (session-import.ts) finishes the same way, with no source session. */
  plan: Pick<ForkPlan, "session" | "branches"> & { sourceSessionId: string | null },
  init: { sessionId: string; tenantId: string; createdAt: number },
): void {
  host.transactionSync(() => {
    for (const value of plan.session) writeValue(host, progress, value, value.seq);
    for (const branch of plan.branches) {
      const tip: ForkValue = { namespace: "pi.branch.tip", key: branch.name, seq: branch.seq ?? 0, json: JSON.stringify(branch.tipId) };
      writeValue(host, progress, tip, branch.seq ?? ++progress.maxSeq);
      if (branch.laneConfig) {
        writeValue(host, progress, branch.laneConfig, branch.laneConfig.seq);
        const idle: ForkValue = { namespace: "pi.lane.state", key: branch.name, seq: 0, json: JSON.stringify({ lastOperationId: null, inbox: [] }) };
        writeValue(host, progress, idle, ++progress.maxSeq);
      }
    }
    host.sql.exec(
      `INSERT INTO meta (singleton, session_id, tenant_id, created_at, storage_version, parent_session_id) VALUES (1, ?, ?, ?, ?, ?)`,
      init.sessionId,
      init.tenantId,
      init.createdAt,
      STORAGE_VERSION,
      plan.sourceSessionId,
    );
    insertCounters(host, progress.maxSeq + 1, progress.messages);
  });
}

function writeValue(host: SqlHost, progress: ForkImport, value: ForkValue, seq: number): void {
  const payload = encodePayloadText(value.json);
  host.sql.exec(
    "INSERT INTO vals (namespace, key, seq, chunks, value) VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, key) DO UPDATE SET seq = excluded.seq, chunks = excluded.chunks, value = excluded.value",
    value.namespace,
    value.key,
    seq,
    payload.chunks?.length ?? 0,
    payload.inline,
  );
  if (payload.chunks) writeChunks(host, seq, payload.chunks);
  progress.maxSeq = Math.max(progress.maxSeq, seq);
}
