import type { EntryStructure } from "../../../schema/entries.ts";
import type { StorageBranchScan } from "../../../harness/session/storage.ts";
import { decodeStructure, parentIdOf, type EntryRow } from "./rows.ts";
import type { SqlHost } from "../../sql/sql-host.ts";
import { idText, storedId } from "./stored-ids.ts";

type StructureRow = Omit<EntryRow, "chunks" | "payload">;

/**
 * Evaluates a branch scan over structure only, in the exact order of reference §1.6:
 * root-ward path from `start` → order → inclusive stop → type filter → exclusive cursor → limit.
 *
 * newestFirst walks parent links in SQL (a recursive CTE over integer `parent_seq`) and stops the
 * recursion at the stop entry, so a context read costs the bounded context, not the history; the
 * outer LIMIT is applied lazily by SQLite. oldestFirst must see the whole path, because its stop
 * applies after ordering ("oldestFirst + stopAtType: compaction" stops at the oldest compaction).
 */
export function walkBranch(host: SqlHost, scan: StorageBranchScan): EntryStructure[] {
  const order = scan.order ?? "newestFirst";
  return order === "newestFirst" ? walkNewestFirst(host, scan) : walkOldestFirst(host, scan);
}

const STRUCTURE = "seq, parent_seq, id, parent_id, ts, type, custom_type";

function walkNewestFirst(host: SqlHost, scan: StorageBranchScan): EntryStructure[] {
  const bindings: (string | number | ArrayBuffer)[] = [storedId(scan.start)];
  const stops: string[] = [];
  if (scan.stopAtType !== undefined) {
    stops.push("path.type <> ?");
    bindings.push(scan.stopAtType);
  }
  if (scan.stopAtId !== undefined) {
    stops.push("path.id <> ?");
    bindings.push(storedId(scan.stopAtId));
  }
  const filters: string[] = [];
  if (scan.type !== undefined) {
    filters.push("type = ?");
    bindings.push(scan.type);
  }
  if (scan.customType !== undefined) {
    filters.push("custom_type = ?");
    bindings.push(scan.customType);
  }
  if (scan.cursor !== undefined) {
    filters.push("seq < ?");
    bindings.push(scan.cursor.seq);
  }
  let limit = "";
  if (scan.limit !== undefined) {
    limit = " LIMIT ?";
    bindings.push(scan.limit);
  }
  const rows = host.sql
    .exec<StructureRow>(
      `WITH RECURSIVE path(${STRUCTURE}) AS (
        SELECT ${STRUCTURE} FROM entries WHERE id = ?
        UNION ALL
        SELECT e.seq, e.parent_seq, e.id, e.parent_id, e.ts, e.type, e.custom_type
        FROM entries e JOIN path ON e.seq = path.parent_seq
        ${stops.length > 0 ? `WHERE ${stops.join(" AND ")}` : ""}
      )
      SELECT seq, ${idText("id")} AS id, ${parentIdOf("path")} AS parent_id, ts, type, custom_type FROM path
      ${filters.length > 0 ? `WHERE ${filters.join(" AND ")}` : ""}${limit}`,
      ...bindings,
    )
    .toArray();
  return rows.map(decodeStructure);
}

function walkOldestFirst(host: SqlHost, scan: StorageBranchScan): EntryStructure[] {
  const path = host.sql
    .exec<StructureRow>(
      `WITH RECURSIVE path(${STRUCTURE}) AS (
        SELECT ${STRUCTURE} FROM entries WHERE id = ?
        UNION ALL
        SELECT e.seq, e.parent_seq, e.id, e.parent_id, e.ts, e.type, e.custom_type
        FROM entries e JOIN path ON e.seq = path.parent_seq
      )
      SELECT seq, ${idText("id")} AS id, ${parentIdOf("path")} AS parent_id, ts, type, custom_type FROM path`,
      storedId(scan.start),
    )
    .toArray()
    .reverse();
  const stopIndex = path.findIndex(
    (row) =>
      (scan.stopAtType !== undefined && row.type === scan.stopAtType) ||
      (scan.stopAtId !== undefined && row.id === scan.stopAtId),
  );
  const stopped = stopIndex === -1 ? path : path.slice(0, stopIndex + 1);
  const selected: EntryStructure[] = [];
  for (const row of stopped) {
    if (scan.type !== undefined && row.type !== scan.type) continue;
    if (scan.customType !== undefined && row.custom_type !== scan.customType) continue;
    if (scan.cursor !== undefined && row.seq <= scan.cursor.seq) continue;
    selected.push(decodeStructure(row));
    if (scan.limit !== undefined && selected.length >= scan.limit) break;
  }
  return selected;
}
