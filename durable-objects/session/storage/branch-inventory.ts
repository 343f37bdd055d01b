import { branchTip, laneConfig } from "../../../harness/session/builtin-addresses.ts";
import { StorageCorruption } from "../../../harness/session/errors.ts";
import { encodeNameCursor } from "../../../schema/api-sessions.ts";
import type { LaneInfo } from "../../../schema/lane.ts";
import type { BranchListing } from "../../../schema/session.ts";
import { takeWithin, type Page, type PageRequest } from "./json-pages.ts";
import type { SqlHost } from "../../sql/sql-host.ts";

// The session's branches and lanes as the REST API lists and counts them. A branch is its tip
// value (`pi.branch.tip/<name>`); a lane is complete when its configuration is stored, which the
// engine writes in the same commit as its state and, for a new branch, its tip. Keys are compared
// in SQLite's binary order, which is the order of `NameCursor` positions (names are ASCII).

const TIPS = branchTip("").namespace;
const LANE_CONFIGS = laneConfig("").namespace;

/** How many branches the session holds (a lane's branch included). */
export function branchCount(host: SqlHost): number {
  return count(host, TIPS);
}

/** How many lanes the session holds. */
export function laneCount(host: SqlHost): number {
  return count(host, LANE_CONFIGS);
}

export function hasBranch(host: SqlHost, name: string): boolean {
  return host.sql.exec("SELECT 1 FROM vals WHERE namespace = ? AND key = ?", TIPS, name).toArray().length > 0;
}

/**
 * `GET /sessions/{sid}/branches`: branches by name after `after`, each with whether a lane is
 * bound to it, found per row by the lane configuration's primary key (no lane is read).
 */
export function branchPage(host: SqlHost, after: string | undefined, page: PageRequest): Page<BranchListing> {
  const rows = host.sql
    .exec<{ name: string; tip: string | null; lane: number }>(
      `SELECT t.key AS name, t.value AS tip, EXISTS (SELECT 1 FROM vals l WHERE l.namespace = ? AND l.key = t.key) AS lane
       FROM vals t WHERE t.namespace = ? AND t.key > ? ORDER BY t.key LIMIT ?`,
      LANE_CONFIGS,
      TIPS,
      after ?? "",
      page.limit + 1,
    )
    .toArray();
  const listed = rows.map((row) => ({ name: row.name, tipId: tipOf(row.name, row.tip), lane: row.lane === 1 }));
  return namedPage(listed, page);
}

/** `GET /sessions/{sid}/lanes`: the harness's lanes (held in memory, at most SESSION_LIMITS.lanes) by name after `after`. */
export function lanePage(lanes: readonly LaneInfo[], after: string | undefined, page: PageRequest): Page<LaneInfo> {
  const candidates = lanes
    .filter((lane) => after === undefined || lane.name > after)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, page.limit + 1);
  return namedPage(candidates, page);
}

/** A page of named rows (fetched with `limit + 1`), bounded like every page; the cursor is the last name. */
function namedPage<T extends { name: string }>(candidates: readonly T[], page: PageRequest): Page<T> {
  const { taken, more } = takeWithin(candidates, page, (item) => JSON.stringify(item).length);
  const last = taken[taken.length - 1];
  return { items: taken, nextCursor: more && last ? encodeNameCursor(last.name) : null };
}

function count(host: SqlHost, namespace: string): number {
  return host.sql.exec<{ count: number }>("SELECT count(*) AS count FROM vals WHERE namespace = ?", namespace).one().count;
}

/** A stored tip: the JSON text of an entry id, or of null for an empty branch. */
function tipOf(name: string, stored: string | null): string | null {
  const tip: unknown = stored === null ? null : JSON.parse(stored);
  if (tip !== null && typeof tip !== "string") throw new StorageCorruption(`The tip of branch "${name}" is not an entry id`);
  return tip;
}
