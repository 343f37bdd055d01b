import type { SessionSummary } from "../../schema/api.ts";
import { PAGE_BYTES_MAX } from "../../schema/api-sessions.ts";
import type { SessionSearch } from "../../schema/session-search.ts";
import { utf8Length } from "../../schema/utf8.ts";
import { parseMetadata } from "./tenant-listings.ts";
import { decodeTimeCursor, encodeTimeCursor, PageItems, type Page } from "./time-cursor.ts";

/**
 * A page reads at most this many index rows (or `limit + 1`, when larger) for the filters the
 * index does not serve (further metadata pairs, status): a page may come back short, even empty,
 * with a `nextCursor` that continues after the last row read. The cost of a page is bounded by
 * this and the page, never by the number of the tenant's sessions.
 */
export const SEARCH_SCAN_ROWS = 1_000;

type SearchRow = { session_id: string; created_at: number; name: string | null; metadata: string | null; agent_id: string | null; agent_version: number | null };

/** A position in creation order, `(created_at, session_id)`: the cursor's and the range's unit. */
type Position = { at: number; id: string };

/**
 * Where the rows of a search come from, in creation order: the whole index (`sessions_by_time`),
 * the sessions bound to one agent (`sessions_by_agent`), or the rows of one metadata pair
 * (`session_metadata`'s key).
 */
type Source = { kind: "time" } | { kind: "agent"; agentId: string } | { kind: "metadata"; key: string; value: string };

const COLUMNS = "s.session_id AS session_id, s.created_at AS created_at, s.name AS name, s.metadata AS metadata, s.agent_id AS agent_id, s.agent_version AS agent_version";
/** Above every creation time (ms since the epoch) and below none. */
const END_OF_TIME = Number.MAX_SAFE_INTEGER;
/** The page's JSON around its items, `{"items":[],"nextCursor":"…"}` (a cursor is under 200 characters). */
const PAGE_FRAMING_BYTES = 256;

/**
 * `GET /v1/sessions` with its filters, answered from the tenant's index alone (never a session
 * object). Sessions queued for deletion (session-deletions.ts) are not listed. The agent (else the first metadata pair, else the time index) is served by an index
 * range in creation order, narrowed by `createdAfter` / `createdBefore` and the cursor; the agent's
 * version, the other pairs and `status` are checked on each row read, at most SEARCH_SCAN_ROWS of them per page. One synchronous turn:
 * the rows are read in chunks of about a page, so a page whose rows all match reads `limit + 1`.
 * A page also ends before the summary that would take it past PAGE_BYTES_MAX of JSON: a thousand
 * summaries of full metadata are about 10 MB, and metadata that JSON-escapes to six bytes a
 * character would pass the platform's 32 MiB RPC limit.
 */
export class SessionSearchScan {
  constructor(
    private readonly sql: SqlStorage,
    /** Sessions with an open operation in the tenant's ledger (read only when `status` is asked). */
    private readonly activeSessions: () => ReadonlySet<string>,
  ) {}

  page(search: SessionSearch): Page<SessionSummary> {
    const [first, ...rest] = search.metadata;
    const { agent } = search;
    const source: Source = agent ? { kind: "agent", agentId: agent.id } : first ? { kind: "metadata", key: first[0], value: first[1] } : { kind: "time" };
    const others = agent ? search.metadata : rest;
    const active = search.status === undefined ? undefined : this.activeSessions();
    const matches = (row: SearchRow): boolean => {
      if (agent?.version !== undefined && row.agent_version !== agent.version) return false;
      if (active && active.has(row.session_id) !== (search.status === "active")) return false;
      if (others.length === 0) return true;
      const metadata = parseMetadata(row.metadata);
      return others.every(([key, value]) => metadata[key] === value);
    };
    const bound = Math.max(SEARCH_SCAN_ROWS, search.limit + 1);
    const chunk = Math.min(bound, Math.max(search.limit + 1, 100));
    const page = new PageItems<SessionSummary>(search.limit, PAGE_BYTES_MAX - PAGE_FRAMING_BYTES);
    // The last row answered: the next page starts after it when this one ends at its limit or its bytes.
    let answered: Position | undefined;
    let { from, until } = range(search);
    let read = 0;
    while (read < bound) {
      const size = Math.min(chunk, bound - read);
      const rows = this.rows(source, search.order, from, until, size);
      read += rows.length;
      for (const row of rows) {
        if (!matches(row)) continue;
        const summary = summaryOf(row);
        // Its JSON and the comma after it.
        const bytes = utf8Length(JSON.stringify(summary)) + 1;
        if (!page.fits(bytes)) return pageOf(page.items, answered);
        page.add(summary, bytes);
        answered = { at: row.created_at, id: row.session_id };
      }
      if (rows.length < size) return pageOf(page.items, undefined);
      const last = rows[rows.length - 1];
      if (!last) return pageOf(page.items, undefined);
      if (search.order === "asc") from = { at: last.created_at, id: last.session_id };
      else until = { at: last.created_at, id: last.session_id };
    }
    // The bound is reached: a short page that continues after the last row read.
    return pageOf(page.items, search.order === "asc" ? from : until);
  }

  /** Rows strictly between `from` and `until` in creation order (`asc`) or its reverse. */
  private rows(source: Source, order: SessionSearch["order"], from: Position, until: Position, size: number): SearchRow[] {
    const direction = order === "asc" ? "ASC" : "DESC";
    if (source.kind === "time") {
      return this.sql
        .exec<SearchRow>(
          `SELECT ${COLUMNS} FROM sessions s
           WHERE (s.created_at, s.session_id) > (?, ?) AND (s.created_at, s.session_id) < (?, ?) AND NOT EXISTS (SELECT 1 FROM session_deletions d WHERE d.session_id = s.session_id)
           ORDER BY s.created_at ${direction}, s.session_id ${direction} LIMIT ?`,
          from.at, from.id, until.at, until.id, size,
        )
        .toArray();
    }
    if (source.kind === "agent") {
      return this.sql
        .exec<SearchRow>(
          `SELECT ${COLUMNS} FROM sessions s INDEXED BY sessions_by_agent
           WHERE s.agent_id = ? AND (s.created_at, s.session_id) > (?, ?) AND (s.created_at, s.session_id) < (?, ?) AND NOT EXISTS (SELECT 1 FROM session_deletions d WHERE d.session_id = s.session_id)
           ORDER BY s.created_at ${direction}, s.session_id ${direction} LIMIT ?`,
          source.agentId, from.at, from.id, until.at, until.id, size,
        )
        .toArray();
    }
    return this.sql
      .exec<SearchRow>(
        `SELECT ${COLUMNS} FROM session_metadata m JOIN sessions s ON s.session_id = m.session_id
         WHERE m.key = ? AND m.value = ? AND (m.created_at, m.session_id) > (?, ?) AND (m.created_at, m.session_id) < (?, ?) AND NOT EXISTS (SELECT 1 FROM session_deletions d WHERE d.session_id = s.session_id)
         ORDER BY m.created_at ${direction}, m.session_id ${direction} LIMIT ?`,
        source.key, source.value, from.at, from.id, until.at, until.id, size,
      )
      .toArray();
  }
}

/**
 * The open interval of positions a search reads: after `createdAfter` and the cursor (ascending)
 * or before `createdBefore` and the cursor (descending). `(t + 1, "")` excludes time `t` whole:
 * every id sorts after the empty string.
 */
function range(search: SessionSearch): { from: Position; until: Position } {
  let from: Position = search.createdAfter === undefined ? { at: -1, id: "" } : { at: search.createdAfter + 1, id: "" };
  let until: Position = search.createdBefore === undefined ? { at: END_OF_TIME, id: "" } : { at: search.createdBefore, id: "" };
  if (search.cursor !== undefined) {
    const cursor = decodeTimeCursor("session", search.cursor);
    if (search.order === "asc" && before(from, cursor)) from = cursor;
    if (search.order === "desc" && before(cursor, until)) until = cursor;
  }
  return { from, until };
}

function before(a: Position, b: Position): boolean {
  return a.at < b.at || (a.at === b.at && a.id < b.id);
}

function summaryOf(row: SearchRow): SessionSummary {
  return {
    id: row.session_id,
    name: row.name,
    createdAt: row.created_at,
    metadata: parseMetadata(row.metadata),
    ...(row.agent_id !== null && row.agent_version !== null && { agent: { id: row.agent_id, version: row.agent_version } }),
  };
}

function pageOf(items: SessionSummary[], next: Position | undefined): Page<SessionSummary> {
  return { items, nextCursor: next === undefined ? null : encodeTimeCursor("session", next.at, next.id) };
}
