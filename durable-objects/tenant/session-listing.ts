import type { RpcResult } from "../../schema/errors.ts";
import type { Wire } from "../../schema/wire.ts";
import { asResult } from "../rpc/rpc-errors.ts";
import type { LazySchema } from "../sql/lazy-schema.ts";
import { SessionIndex, type SessionListOrder, type SessionSummary } from "./tenant-listings.ts";
import { SessionUsageMarks } from "./session-usage-marks.ts";
import type { Page } from "./time-cursor.ts";

/** The session index: what a listing shows, so that a listing touches this object only. */
export class SessionListing {
  constructor(
    private readonly schema: LazySchema,
    private readonly sql: SqlStorage,
  ) {}

  /** Idempotent (a retried creation refreshes the row); called before creation answers. */
  async registerSession(summary: SessionSummary): Promise<void> {
    if (this.schema.exists) new SessionIndex(this.sql).register(summary);
  }

  async renameSession(sessionId: string, name: string | null): Promise<void> {
    if (this.schema.exists) new SessionIndex(this.sql).rename(sessionId, name);
  }

  /** The session's usage mark goes with it (a session created again under its id starts a new ledger). */
  async unregisterSession(sessionId: string): Promise<void> {
    if (!this.schema.exists) return;
    new SessionIndex(this.sql).unregister(sessionId);
    new SessionUsageMarks(this.sql).forget(sessionId);
  }

  /** Sessions in creation order or newest first, a page at a time; the cursor is opaque to clients. */
  async listSessions(limit: number, cursor: string | undefined, order: SessionListOrder = "asc"): Promise<Wire<RpcResult<Page<SessionSummary>>>> {
    return asResult(() => (this.schema.exists ? new SessionIndex(this.sql).list(limit, cursor, order) : { items: [], nextCursor: null }));
  }
}
