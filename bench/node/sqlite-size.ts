import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

// Retained bytes, measured the same way for both servers: the Durable Objects' SQLite files that
// wrangler dev persists (<persist>/v3/do/<script>-<class>/<id>.sqlite), opened read-only beside the
// running server (WAL mode lets a second process read). page_count × page_size is what the platform
// reports as `ctx.storage.sql.databaseSize`.

/** The size in bytes of every Durable Object database under `persistDir`, by file. */
export function objectDatabaseSizes(persistDir: string): Map<string, number> {
  const sizes = new Map<string, number>();
  const root = join(persistDir, "v3", "do");
  for (const classDir of readdirSync(root)) {
    for (const file of readdirSync(join(root, classDir))) {
      if (!file.endsWith(".sqlite") || file === "metadata.sqlite") continue;
      sizes.set(join(classDir, file), databaseSize(join(root, classDir, file)));
    }
  }
  return sizes;
}

export function databaseSize(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const pages = Number(db.prepare("PRAGMA page_count").get()?.page_count ?? 0);
    const pageSize = Number(db.prepare("PRAGMA page_size").get()?.page_size ?? 0);
    return pages * pageSize;
  } finally {
    db.close();
  }
}

/** The file among `after` that grew most since `before`, with its growth. */
export function largestGrowth(before: Map<string, number>, after: Map<string, number>): { file: string; growth: number } {
  return rankedGrowth(before, after, 1);
}

/** The file among `after` with the `rank`-th largest growth since `before` (1: the largest). */
export function rankedGrowth(before: Map<string, number>, after: Map<string, number>, rank: number): { file: string; growth: number } {
  const growths = [...after].map(([file, size]) => ({ file, growth: size - (before.get(file) ?? 0) })).sort((a, b) => b.growth - a.growth);
  return growths[rank - 1] ?? { file: "", growth: -1 };
}
