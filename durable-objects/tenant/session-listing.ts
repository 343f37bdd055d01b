import type { RpcResult } from "../../schema/errors.ts";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { SessionMetadata } from "../../schema/session-metadata.ts";
import type { SessionSearch } from "../../schema/session-search.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import { SessionIndex, type SessionSummary } from "./tenant-listings.ts";
import { SessionSearchScan } from "./session-search.ts";
import { SessionDeletions } from "./session-deletions.ts";
import type { TenantHost } from "./tenant-host.ts";
import type { Page } from "./time-cursor.ts";

/** What this module reaches of the host (tenant-host.ts): the ledger only for a search by status. */
type ListingHost = Pick<TenantHost, "schema" | "sql" | "operations" | "deletion" | "storageRefusal">;

/** The session index: what a listing shows and a search filters on, so that both touch this object only. */
export class SessionListing {
  constructor(private readonly host: ListingHost) {}

  /**
   * Idempotent (a retried creation refreshes the row); called before creation answers. A session
   * created while the tenant is being deleted (a request that presented its key just before) is
   * queued for deletion with the others (data-lifecycle.ts); once the tenant is gone (its storage
   * deleted) nothing is registered, and the caller deletes the session it made.
   */
  async registerSession(summary: SessionSummary): Promise<{ registered: boolean; full?: true }> {
    if (!this.host.schema.exists) return { registered: false };
    const index = new SessionIndex(this.host.sql);
    // A tenant object at its storage budget lists no new session (its row and metadata would not
    // fit); one already listed (a retried creation) is refreshed.
    if (!index.has(summary.id) && this.host.storageRefusal()) return { registered: false, full: true };
    // A session created again under a deleted one's id before that deletion's last step: what
    // the tenant kept of the deleted one goes now (its row, queue place, usage mark and slots),
    // and that step then finds a row not its own and keeps it (SessionDeletions.finished).
    if (index.heldByPredecessor(summary)) new SessionDeletions(this.host.sql).finished(summary.id);
    index.register(summary);
    if (this.host.deletion()) new SessionDeletions(this.host.sql).queue(summary.id, Date.now());
    return { registered: true };
  }

  /** After a PATCH of the session's name, before it answers; `seq` orders concurrent renames. */
  async renameSession(sessionId: string, name: string | null, seq: number): Promise<void> {
    if (this.host.schema.exists) this.changed(sessionId).rename(sessionId, name, seq);
  }

  /** After a PATCH of the session's metadata, before it answers; `seq` orders concurrent patches. */
  async setSessionMetadata(sessionId: string, metadata: SessionMetadata, seq: number): Promise<void> {
    if (this.host.schema.exists) this.changed(sessionId).setMetadata(sessionId, metadata, seq);
  }

  /** After a PATCH that moved the session to another agent version, before it answers; `seq` orders concurrent moves. */
  async setSessionAgent(sessionId: string, agent: AgentVersionRef, seq: number): Promise<void> {
    if (this.host.schema.exists) this.changed(sessionId).setAgent(sessionId, agent, seq);
  }

  /** After a PATCH that changed only the session's settings, before it answers: activity too. */
  async sessionChanged(sessionId: string): Promise<void> {
    if (this.host.schema.exists) this.changed(sessionId);
  }

  /** A PATCH is activity: retention counts a session's idleness from its last one. */
  private changed(sessionId: string): SessionIndex {
    const index = new SessionIndex(this.host.sql);
    index.touch(sessionId, Date.now());
    return index;
  }

  /**
   * The session's usage mark goes with it (a session created again under its id starts a new
   * ledger), and its place in the deletion queue, if it had one (session-deletions.ts).
   * `createdAt`: the deleted session's, so that a session created again under the id meanwhile
   * keeps its row.
   */
  async unregisterSession(sessionId: string, createdAt?: number): Promise<void> {
    if (this.host.schema.exists) new SessionDeletions(this.host.sql).finished(sessionId, createdAt);
  }

  /** A page of the sessions matching every filter (session-search.ts); the cursor is opaque to clients. */
  async searchSessions(search: SessionSearch): Promise<Wire<RpcResult<Page<SessionSummary>>>> {
    return asResult(() =>
      this.host.schema.exists
        ? new SessionSearchScan(this.host.sql, () => this.host.operations().sessionsWithOpenOperations()).page(search)
        : { items: [], nextCursor: null },
    );
  }
}
