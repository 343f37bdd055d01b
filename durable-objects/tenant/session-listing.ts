import type { RpcResult } from "../../schema/errors.ts";
import type { AgentVersionRef } from "../../schema/agent-binding.ts";
import type { SessionMetadata } from "../../schema/session-metadata.ts";
import type { SessionSearch } from "../../schema/session-search.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import { SessionIndex, type SessionSummary } from "./tenant-listings.ts";
import { SessionSearchScan } from "./session-search.ts";
import { SessionUsageMarks } from "./session-usage-marks.ts";
import type { TenantHost } from "./tenant-host.ts";
import type { Page } from "./time-cursor.ts";

/** What this module reaches of the host (tenant-host.ts): the ledger only for a search by status. */
type ListingHost = Pick<TenantHost, "schema" | "sql" | "operations">;

/** The session index: what a listing shows and a search filters on, so that both touch this object only. */
export class SessionListing {
  constructor(private readonly host: ListingHost) {}

  /** Idempotent (a retried creation refreshes the row); called before creation answers. */
  async registerSession(summary: SessionSummary): Promise<void> {
    if (this.host.schema.exists) new SessionIndex(this.host.sql).register(summary);
  }

  async renameSession(sessionId: string, name: string | null): Promise<void> {
    if (this.host.schema.exists) new SessionIndex(this.host.sql).rename(sessionId, name);
  }

  /** After a PATCH of the session's metadata, before it answers; `seq` orders concurrent patches. */
  async setSessionMetadata(sessionId: string, metadata: SessionMetadata, seq: number): Promise<void> {
    if (this.host.schema.exists) new SessionIndex(this.host.sql).setMetadata(sessionId, metadata, seq);
  }

  /** After a PATCH that moved the session to another agent version, before it answers. */
  async setSessionAgent(sessionId: string, agent: AgentVersionRef): Promise<void> {
    if (this.host.schema.exists) new SessionIndex(this.host.sql).setAgent(sessionId, agent);
  }

  /** The session's usage mark goes with it (a session created again under its id starts a new ledger). */
  async unregisterSession(sessionId: string): Promise<void> {
    if (!this.host.schema.exists) return;
    new SessionIndex(this.host.sql).unregister(sessionId);
    new SessionUsageMarks(this.host.sql).forget(sessionId);
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
