import type { SessionListOrder, SessionSummary, TenantSummary } from "../../schema/api.ts";
import { decodeTimeCursor, timePage, type Page } from "./time-cursor.ts";

export type { SessionListOrder, SessionSummary, TenantSummary };

type SessionRow = { session_id: string; name: string | null; created_at: number };
type DirectoryRow = { tenant_id: string; name: string; created_at: number };

/**
 * The tenant's index of its sessions: what a listing shows, kept here so that a listing touches
 * this one object instead of waking every listed session. Written when a session is created and
 * when its name changes through the API (both before the answer), removed when it is deleted.
 * Each method is one synchronous SQL turn.
 */
export class SessionIndex {
  constructor(private readonly sql: SqlStorage) {}

  /** Idempotent: a repeat (a retried creation) refreshes the name and keeps the first creation time. */
  register(summary: SessionSummary): void {
    this.sql.exec(
      `INSERT INTO sessions (session_id, created_at, name) VALUES (?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE SET name = excluded.name`,
      summary.id,
      summary.createdAt,
      summary.name,
    );
  }

  /** Only an indexed session is renamed: a rename never lists a session that is not indexed. */
  rename(sessionId: string, name: string | null): void {
    this.sql.exec("UPDATE sessions SET name = ? WHERE session_id = ?", name, sessionId);
  }

  unregister(sessionId: string): void {
    this.sql.exec("DELETE FROM sessions WHERE session_id = ?", sessionId);
  }

  /** Sessions in creation order (`asc`) or newest first (`desc`), a page at a time; the cursor is exclusive in that order. */
  list(limit: number, cursor: string | undefined, order: SessionListOrder = "asc"): Page<SessionSummary> {
    const rows = order === "asc" ? this.oldestFirst(limit, cursor) : this.newestFirst(limit, cursor);
    return timePage(rows, limit, (row) => row.created_at, (row) => row.session_id, (row) => ({ id: row.session_id, name: row.name, createdAt: row.created_at }));
  }

  private oldestFirst(limit: number, cursor: string | undefined): SessionRow[] {
    const after = decodeTimeCursor(cursor);
    return this.sql
      .exec<SessionRow>(
        `SELECT session_id, name, created_at FROM sessions
         WHERE (created_at, session_id) > (?, ?) ORDER BY created_at, session_id LIMIT ?`,
        after.at,
        after.id,
        limit + 1,
      )
      .toArray();
  }

  private newestFirst(limit: number, cursor: string | undefined): SessionRow[] {
    if (cursor === undefined) {
      return this.sql.exec<SessionRow>("SELECT session_id, name, created_at FROM sessions ORDER BY created_at DESC, session_id DESC LIMIT ?", limit + 1).toArray();
    }
    const before = decodeTimeCursor(cursor);
    return this.sql
      .exec<SessionRow>(
        `SELECT session_id, name, created_at FROM sessions
         WHERE (created_at, session_id) < (?, ?) ORDER BY created_at DESC, session_id DESC LIMIT ?`,
        before.at,
        before.id,
        limit + 1,
      )
      .toArray();
  }
}

/** The admin's list of tenants, kept by the one directory object; each method is one SQL turn. */
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
    const after = decodeTimeCursor(cursor);
    const rows = this.sql
      .exec<DirectoryRow>(
        `SELECT tenant_id, name, created_at FROM tenant_directory
         WHERE (created_at, tenant_id) > (?, ?) ORDER BY created_at, tenant_id LIMIT ?`,
        after.at,
        after.id,
        limit + 1,
      )
      .toArray();
    return timePage(rows, limit, (row) => row.created_at, (row) => row.tenant_id, (row) => ({ id: row.tenant_id, name: row.name, createdAt: row.created_at }));
  }
}
