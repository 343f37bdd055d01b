import type { ForkOptions } from "../../../schema/api-fork.ts";
import { RpcError } from "../../rpc/rpc-errors.ts";
import { readPayloadText } from "./payload-codec.ts";
import { parentIdOf } from "./rows.ts";
import type { SqlHost } from "../../sql/sql-host.ts";
import { idText, storedId } from "./stored-ids.ts";

// The source half of a fork (reference §1.11): a plan read in one synchronous step, then pages.
// Entries are write-once, so pages of entries with seq ≤ the plan's high-water mark are one
// coherent snapshot however long the copy takes. The plan itself (name, settings, resources,
// branch tips, lane configurations) is read at once, bounded by the session's caps. Labels of a
// page's entries and (tree scope) application values are read with their page: one changed while
// the copy runs arrives in its newer state.

/** Built-in namespaces a fork knows what to do with; live state in any other `pi.*` one refuses it. */
const COPIED = ["pi.session.name", "pi.session.metadata", "pi.session.agent", "pi.settings", "pi.resources", "pi.tools", "pi.mcp", "pi.branch.tip", "pi.lane.config", "pi.entry.label"];
const EXCLUDED = ["pi.lane.state", "pi.result", "pi.capture"];
const EXCLUDED_FAMILIES = ["pi.op.", "pi.pending."];
/** What one page carries at most (a single larger entry travels alone). */
export const FORK_PAGE_BYTES = 4 * 1024 * 1024;
const FORK_PAGE_ROWS = 2_000;

export interface ForkValue {
  namespace: string;
  key: string;
  seq: number;
  /** The stored JSON text. */
  json: string;
}

export interface ForkPlan {
  sourceSessionId: string;
  /** The source's last seq when planned: entries after it are not copied. */
  highWater: number;
  /** Session-level values copied in both scopes (name, metadata, agent binding, settings, resources, tool definitions). */
  session: ForkValue[];
  /** Tips to write; `seq` is absent for a tip the fork computes (branch scope, `before`). */
  branches: { name: string; tipId: string | null; seq?: number; laneConfig?: ForkValue }[];
  /** Where the entry pages start. */
  entries: { kind: "path"; from: string | null } | { kind: "tree" };
  /** Application values and lists are copied in tree scope only. */
  data: boolean;
}

export interface ForkEntryRow {
  seq: number;
  id: string;
  parentId: string | null;
  parentSeq: number | null;
  ts: number;
  type: string;
  customType: string | null;
  json: string | null;
}

export interface ForkEntryPage {
  rows: ForkEntryRow[];
  labels: ForkValue[];
  /** Where the next page starts; null when this was the last. */
  next: ForkEntryCursor | null;
}

export type ForkEntryCursor = { kind: "path"; from: string } | { kind: "tree"; afterSeq: number };

export interface ForkDataPage {
  values: ForkValue[];
  items: ForkValue[];
  next: ForkDataCursor | null;
}

export type ForkDataCursor = { kind: "values"; after: [string, string] | null } | { kind: "items"; afterSeq: number };

function invalid(reason: string, message: string): RpcError {
  return new RpcError({ code: "InvalidFork", message, details: { reason } });
}

function declared(namespace: string): boolean {
  return COPIED.includes(namespace) || EXCLUDED.includes(namespace) || EXCLUDED_FAMILIES.some((family) => namespace.startsWith(family));
}

/** Reads the plan on the object's line (synchronous: one coherent moment). */
export function forkPlan(
  host: SqlHost,
  /** The source, and its last seq used (the storage's, in memory: the stored row holds only a limit). */
  source: { sessionId: string; highWater: number },
  options: ForkOptions,
): ForkPlan {
  const { sessionId: sourceSessionId, highWater } = source;
  const reserved = host.sql
    .exec<{ namespace: string }>(
      "SELECT DISTINCT namespace FROM vals WHERE namespace = 'pi' OR substr(namespace, 1, 3) = 'pi.' UNION SELECT DISTINCT namespace FROM list_items WHERE namespace = 'pi' OR substr(namespace, 1, 3) = 'pi.'",
    )
    .toArray()
    .map((row) => row.namespace);
  const unknown = reserved.filter((namespace) => !declared(namespace));
  if (unknown.length > 0) throw invalid("undeclared_namespace", `The session holds state a fork does not know how to copy (${unknown.join(", ")})`);
  // Tool definitions and MCP servers are bounded per session (MAX_SESSION_TOOLS, MAX_SESSION_MCP_SERVERS);
  // an http tool's sealed secret and an MCP server's sealed headers are bound to this session and
  // are sealed again for the fork by the destination.
  // The agent binding too: a fork of a session made from an agent stays bound to its version.
  const session = ["pi.session.name", "pi.session.metadata", "pi.session.agent", "pi.settings", "pi.resources", "pi.tools", "pi.mcp"].flatMap((namespace) => readValues(host, namespace));
  const configs = new Map(readValues(host, "pi.lane.config").map((config) => [config.key, config]));
  if (options.scope === "tree") {
    const branches = readValues(host, "pi.branch.tip").map((tip) => {
      const laneConfig = configs.get(tip.key);
      const tipId: string | null = JSON.parse(tip.json);
      return { name: tip.key, tipId, seq: tip.seq, ...(laneConfig && { laneConfig }) };
    });
    return { sourceSessionId, highWater, session, branches, entries: { kind: "tree" }, data: true };
  }
  const tip = readValues(host, "pi.branch.tip", options.branch)[0];
  if (!tip) throw new RpcError({ code: "UnknownBranch", message: `Branch "${options.branch}" does not exist`, details: { branch: options.branch } });
  const laneConfig = configs.get(options.branch);
  if (!laneConfig) throw invalid("data_only_branch", `Branch "${options.branch}" has no lane: only a lane's branch can be forked alone`);
  const tipId: string | null = JSON.parse(tip.json);
  const target = options.entryId ?? tipId;
  let from: string | null = target;
  if (target !== null && options.entryId !== undefined) {
    const entry = host.sql.exec<{ parent_id: string | null }>(`SELECT ${parentIdOf("entries")} AS parent_id FROM entries WHERE id = ?`, storedId(target)).toArray()[0];
    if (!entry) throw new RpcError({ code: "UnknownEntry", message: `Entry ${target} does not exist`, details: { entryId: target } });
    if (tipId === null || !onPath(host, tipId, target)) throw invalid("not_on_branch", `Entry ${target} is not on branch "${options.branch}"`);
    if (options.position === "before") from = entry.parent_id;
  } else if (target !== null && options.position === "before") {
    from = host.sql.exec<{ parent_id: string | null }>(`SELECT ${parentIdOf("entries")} AS parent_id FROM entries WHERE id = ?`, storedId(target)).one().parent_id;
  }
  return {
    sourceSessionId,
    highWater,
    session,
    branches: [{ name: options.branch, tipId: from, ...(from === tipId && { seq: tip.seq }), laneConfig }],
    entries: { kind: "path", from },
    data: false,
  };
}

/** Whether `entryId` is on the root-ward path from `tipId` (the recursion stops when found). */
function onPath(host: SqlHost, tipId: string, entryId: string): boolean {
  return (
    host.sql
      .exec<{ found: number }>(
        `WITH RECURSIVE path(seq, parent_seq, id) AS (
          SELECT seq, parent_seq, id FROM entries WHERE id = ?
          UNION ALL
          SELECT e.seq, e.parent_seq, e.id FROM entries e JOIN path ON e.seq = path.parent_seq WHERE path.id <> ?
        )
        SELECT count(*) AS found FROM path WHERE id = ?`,
        storedId(tipId),
        storedId(entryId),
        storedId(entryId),
      )
      .one().found > 0
  );
}

type RawRow = { seq: number; id: string; parent_id: string | null; parent_seq: number | null; ts: number; type: string; custom_type: string | null; chunks: number; payload: string | null };
const ROW = "seq, id, parent_id, parent_seq, ts, type, custom_type, chunks, payload";
/** ROW as read from `row` (table or alias), with the parent's id resolved (rows.ts parentIdOf). */
const ROW_OF = (row: string): string => ROW.replace("id, parent_id", `${idText(`${row}.id`)} AS id, ${parentIdOf(row)} AS parent_id`);

/** One page of entries: a path page walks parent links from `from`; a tree page goes by seq. */
export function forkEntryPage(host: SqlHost, plan: Pick<ForkPlan, "highWater">, cursor: ForkEntryCursor): ForkEntryPage {
  const raw =
    cursor.kind === "tree"
      ? host.sql.exec<RawRow>(`SELECT ${ROW_OF("entries")} FROM entries WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`, cursor.afterSeq, plan.highWater, FORK_PAGE_ROWS).toArray()
      : host.sql
          .exec<RawRow>(
            `WITH RECURSIVE path(${ROW}) AS (
              SELECT ${ROW} FROM entries WHERE id = ?
              UNION ALL
              SELECT e.seq, e.id, e.parent_id, e.parent_seq, e.ts, e.type, e.custom_type, e.chunks, e.payload FROM entries e JOIN path ON e.seq = path.parent_seq
            )
            SELECT ${ROW_OF("path")} FROM path LIMIT ?`,
            storedId(cursor.from),
            FORK_PAGE_ROWS,
          )
          .toArray();
  const rows: ForkEntryRow[] = [];
  let bytes = 0;
  for (const row of raw) {
    if (rows.length > 0 && bytes >= FORK_PAGE_BYTES) break;
    const json = readPayloadText(host, row.seq, row.chunks, row.payload);
    bytes += (json?.length ?? 0) + 200;
    rows.push({ seq: row.seq, id: row.id, parentId: row.parent_id, parentSeq: row.parent_seq, ts: row.ts, type: row.type, customType: row.custom_type, json });
  }
  const last = rows[rows.length - 1];
  let next: ForkEntryCursor | null = null;
  if (last && cursor.kind === "tree") {
    if (rows.length < raw.length || raw.length === FORK_PAGE_ROWS) next = { kind: "tree", afterSeq: last.seq };
  } else if (last && last.parentId !== null) {
    next = { kind: "path", from: last.parentId };
  }
  return { rows, labels: labelsOf(host, rows.map((row) => row.id)), next };
}

/** One page of application values, then of application list items (tree scope). */
export function forkDataPage(host: SqlHost, plan: Pick<ForkPlan, "highWater">, cursor: ForkDataCursor): ForkDataPage {
  if (cursor.kind === "values") {
    const after = cursor.after ?? ["", ""];
    const raw = host.sql
      .exec<{ namespace: string; key: string; seq: number; chunks: number; value: string | null }>(
        `SELECT namespace, key, seq, chunks, value FROM vals
         WHERE namespace <> 'pi' AND substr(namespace, 1, 3) <> 'pi.' AND (namespace > ? OR (namespace = ? AND key > ?))
         ORDER BY namespace, key LIMIT ?`,
        after[0],
        after[0],
        after[1],
        FORK_PAGE_ROWS,
      )
      .toArray();
    const values = paged(host, raw);
    const last = values[values.length - 1];
    const more = values.length < raw.length || raw.length === FORK_PAGE_ROWS;
    return { values, items: [], next: last && more ? { kind: "values", after: [last.namespace, last.key] } : { kind: "items", afterSeq: 0 } };
  }
  const raw = host.sql
    .exec<{ namespace: string; key: string; seq: number; chunks: number; value: string | null }>(
      `SELECT namespace, key, seq, chunks, value FROM list_items
       WHERE seq > ? AND seq <= ? AND namespace <> 'pi' AND substr(namespace, 1, 3) <> 'pi.' ORDER BY seq LIMIT ?`,
      cursor.afterSeq,
      plan.highWater,
      FORK_PAGE_ROWS,
    )
    .toArray();
  const items = paged(host, raw);
  const last = items[items.length - 1];
  const more = items.length < raw.length || raw.length === FORK_PAGE_ROWS;
  return { values: [], items, next: last && more ? { kind: "items", afterSeq: last.seq } : null };
}

function paged(host: SqlHost, raw: { namespace: string; key: string; seq: number; chunks: number; value: string | null }[]): ForkValue[] {
  const out: ForkValue[] = [];
  let bytes = 0;
  for (const row of raw) {
    if (out.length > 0 && bytes >= FORK_PAGE_BYTES) break;
    const json = readPayloadText(host, row.seq, row.chunks, row.value);
    if (json === null) continue;
    bytes += json.length + row.namespace.length + row.key.length + 50;
    out.push({ namespace: row.namespace, key: row.key, seq: row.seq, json });
  }
  return out;
}

function readValues(host: SqlHost, namespace: string, key?: string): ForkValue[] {
  const raw = host.sql
    .exec<{ namespace: string; key: string; seq: number; chunks: number; value: string | null }>(
      key === undefined ? "SELECT namespace, key, seq, chunks, value FROM vals WHERE namespace = ? ORDER BY key" : "SELECT namespace, key, seq, chunks, value FROM vals WHERE namespace = ? AND key = ?",
      ...(key === undefined ? [namespace] : [namespace, key]),
    )
    .toArray();
  return raw.flatMap((row) => {
    const json = readPayloadText(host, row.seq, row.chunks, row.value);
    return json === null ? [] : [{ namespace: row.namespace, key: row.key, seq: row.seq, json }];
  });
}

function labelsOf(host: SqlHost, ids: readonly string[]): ForkValue[] {
  if (ids.length === 0) return [];
  return host.sql
    .exec<{ key: string; seq: number; value: string | null }>(
      "SELECT key, seq, value FROM vals WHERE namespace = 'pi.entry.label' AND key IN (SELECT value FROM json_each(?))",
      JSON.stringify(ids),
    )
    .toArray()
    .flatMap((row) => (row.value === null ? [] : [{ namespace: "pi.entry.label", key: row.key, seq: row.seq, json: row.value }]));
}
