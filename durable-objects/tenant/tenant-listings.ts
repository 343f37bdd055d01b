import type { SessionSummary, TenantSummary } from "../../schema/api.ts";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { SessionMetadata } from "../../schema/session-metadata.ts";
import { decodeTimeCursor, timePage, type Page } from "./time-cursor.ts";

export type { SessionSummary, TenantSummary };

type DirectoryRow = { tenant_id: string; name: string; created_at: number; status: string };

/**
 * The tenant's index of its sessions: what a listing shows and what a search filters on, kept here
 * so that a listing touches this one object instead of waking every listed session. Written when
 * a session is created and when its name or metadata changes through the API (each before the
 * answer), removed when it is deleted; a turn never writes here. Each metadata pair also has a row
 * in `session_metadata`, which a search by that pair reads in creation order (session-search.ts).
 * Each method is one synchronous SQL turn.
 */
/**
 * A session's recorded activity moves only when it is this much older than the activity: it is
 * therefore at most this much behind the latest one, and retention adds it to its cutoff, so a
 * session is never deleted before it has been idle its whole retention (at most this much after).
 */
export const ACTIVITY_STEP_MS = 3_600_000;

export class SessionIndex {
  constructor(private readonly sql: SqlStorage) {}

  /**
   * Idempotent: a repeat (a retried creation) keeps the first creation time, and refreshes the
   * name and the metadata only while no PATCH has changed them since (a PATCH's seq is above 0).
   */
  register(summary: SessionSummary): void {
    const existing = this.row(summary.id);
    if (!existing) {
      this.sql.exec(
        "INSERT INTO sessions (session_id, created_at, name, metadata, metadata_seq, agent_id, agent_version, last_active_at) VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
        summary.id,
        summary.createdAt,
        summary.name,
        metadataText(summary.metadata),
        summary.agent?.id ?? null,
        summary.agent?.version ?? null,
        summary.createdAt,
      );
      this.addPairs(summary.id, summary.createdAt, summary.metadata);
      return;
    }
    if (existing.name_seq === 0) this.sql.exec("UPDATE sessions SET name = ? WHERE session_id = ?", summary.name, summary.id);
    if (existing.metadata_seq === 0) this.replaceMetadata(existing, summary.metadata, 0);
  }

  /**
   * The agent version a session moved to, with the seq of the session's commit that bound it: of
   * two concurrent moves the session's order decides what it is bound to, and the index keeps the
   * same one, whichever reached this object last.
   */
  setAgent(sessionId: string, agent: AgentVersionRef | null, seq: number): void {
    this.sql.exec(
      "UPDATE sessions SET agent_id = ?, agent_version = ?, agent_seq = ? WHERE session_id = ? AND agent_seq <= ?",
      agent?.id ?? null,
      agent?.version ?? null,
      seq,
      sessionId,
      seq,
    );
  }

  /**
   * The session was active at `now` (a settled operation, a PATCH): what retention measures
   * idleness by (data-lifecycle.ts). Never moves back. A session queued by retention and not yet
   * deleted is idle no more: it leaves the queue (session-deletions.ts) and is listed again.
   */
  touch(sessionId: string, now: number): void {
    // Written once per ACTIVITY_STEP_MS at most, not with every settled turn (two rows written each,
    // row and index: QUALITY P12); retention allows for the step (session-deletions.ts queueIdle).
    this.sql.exec("UPDATE sessions SET last_active_at = ? WHERE session_id = ? AND coalesce(last_active_at, 0) <= ?", now, sessionId, now - ACTIVITY_STEP_MS);
    this.sql.exec("DELETE FROM session_deletions WHERE session_id = ? AND idle_before IS NOT NULL", sessionId);
  }

  /**
   * Only an indexed session is renamed: a rename never lists a session that is not indexed. An
   * older rename (the seq of its write below the one indexed) changes nothing, as for metadata.
   */
  rename(sessionId: string, name: string | null, seq: number): void {
    this.sql.exec("UPDATE sessions SET name = ?, name_seq = ? WHERE session_id = ? AND name_seq <= ?", name, seq, sessionId, seq);
  }

  /**
   * The session's metadata after a PATCH, with the seq of the session's write: an older write (a
   * concurrent PATCH that reached the session first but this object last) changes nothing. Only an
   * indexed session is updated, as for a rename.
   */
  setMetadata(sessionId: string, metadata: SessionMetadata, seq: number): void {
    const existing = this.row(sessionId);
    if (existing && seq >= existing.metadata_seq) this.replaceMetadata(existing, metadata, seq);
  }

  /**
   * Whether the id's row is another session's, created at another time: that session was deleted
   * (the new one's object is new) and its row not yet removed, its deletion's last step still to come.
   */
  heldByPredecessor(summary: SessionSummary): boolean {
    return this.heldByAnother(summary.id, summary.createdAt);
  }

  /** Whether the id has a row, and it is the one of a session created at another time than `createdAt`. */
  heldByAnother(sessionId: string, createdAt: number): boolean {
    const existing = this.row(sessionId);
    return existing !== undefined && existing.created_at !== createdAt;
  }

  unregister(sessionId: string): void {
    const existing = this.row(sessionId);
    if (!existing) return;
    this.removePairs(existing);
    this.sql.exec("DELETE FROM sessions WHERE session_id = ?", sessionId);
  }

  /** Whether the id has a row (any creation of it). */
  has(sessionId: string): boolean {
    return this.row(sessionId) !== undefined;
  }

  private row(sessionId: string): IndexedSession | undefined {
    return this.sql.exec<IndexedSession>("SELECT session_id, created_at, metadata, metadata_seq, name_seq FROM sessions WHERE session_id = ?", sessionId).toArray()[0];
  }

  private replaceMetadata(existing: IndexedSession, metadata: SessionMetadata, seq: number): void {
    this.removePairs(existing);
    this.sql.exec("UPDATE sessions SET metadata = ?, metadata_seq = ? WHERE session_id = ?", metadataText(metadata), seq, existing.session_id);
    this.addPairs(existing.session_id, existing.created_at, metadata);
  }

  private addPairs(sessionId: string, createdAt: number, metadata: SessionMetadata): void {
    for (const [key, value] of Object.entries(metadata)) {
      this.sql.exec(
        "INSERT INTO session_metadata (key, value, created_at, session_id) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        key,
        value,
        createdAt,
        sessionId,
      );
    }
  }

  /** By each pair's whole key (the session's row holds the pairs): no scan, no second index. */
  private removePairs(existing: IndexedSession): void {
    for (const [key, value] of Object.entries(parseMetadata(existing.metadata))) {
      this.sql.exec("DELETE FROM session_metadata WHERE key = ? AND value = ? AND created_at = ? AND session_id = ?", key, value, existing.created_at, existing.session_id);
    }
  }
}

type IndexedSession = { session_id: string; created_at: number; metadata: string | null; metadata_seq: number; name_seq: number };

/** Null for an empty map: most sessions carry none, and their rows stay as small as before. */
function metadataText(metadata: SessionMetadata): string | null {
  return Object.keys(metadata).length === 0 ? null : JSON.stringify(metadata);
}

/** A row's metadata (written only by this index, from validated maps). */
export function parseMetadata(text: string | null): SessionMetadata {
  if (text === null) return {};
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== "object" || parsed === null) return {};
  return Object.fromEntries(Object.entries(parsed).filter((pair): pair is [string, string] => typeof pair[1] === "string"));
}

/**
 * The admin's list of tenants, kept by the one directory object; each method is one SQL turn. A
 * tenant being deleted is listed with `status: "deleting"`; a deleted one (a tombstone:
 * directory-lifecycle.ts) is not.
 */
export class TenantDirectory {
  constructor(private readonly sql: SqlStorage) {}

  /** Idempotent: a repeat keeps the first row. */
  register(tenant: TenantSummary): void {
    this.sql.exec(
      "INSERT INTO tenant_directory (tenant_id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (tenant_id) DO NOTHING",
      tenant.id,
      tenant.name,
      tenant.createdAt,
    );
  }

  list(limit: number, cursor: string | undefined): Page<TenantSummary> {
    const after = decodeTimeCursor("tenant", cursor);
    const rows = this.sql
      .exec<DirectoryRow>(
        `SELECT tenant_id, name, created_at, status FROM tenant_directory
         WHERE (created_at, tenant_id) > (?, ?) AND status != 'deleted' ORDER BY created_at, tenant_id LIMIT ?`,
        after.at,
        after.id,
        limit + 1,
      )
      .toArray();
    return timePage("tenant", rows, limit, (row) => row.created_at, (row) => row.tenant_id, (row) => ({
      id: row.tenant_id,
      name: row.name,
      createdAt: row.created_at,
      ...(row.status === "deleting" && { status: "deleting" as const }),
    }));
  }
}
