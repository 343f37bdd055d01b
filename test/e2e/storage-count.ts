import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

// wrangler dev keeps one SQLite file per Durable Object under the persist folder
// (v3/do/<script>-<class>/<id>.sqlite). Measured (issue 31, and issue 35 for deletions):
// - the local runtime creates that file for every object it instantiates, whatever the object
//   does, holding only its own table `__miniflare_do_name` (the object's name, for local tooling);
//   an object that runs no SQL, or only reads (sqlite_master, its KV), adds nothing to it;
// - after `ctx.storage.deleteAll()` the file stays, but holds no table at all (not even
//   `__miniflare_do_name`).
// So a count of the files proves nothing either way: the tests count the databases that hold a
// table of ours, i.e. the objects that store something now.

/** The per-object databases under `dir` that hold a table besides the local runtime's own. */
export function databasesWithOurTables(dir: string): string[] {
  const files = readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((path) => path.includes(join("v3", "do")) && path.endsWith(".sqlite") && !path.endsWith("metadata.sqlite"))
    .map((path) => join(dir, path));
  return files.filter((file) => ourTablesIn(file));
}

/**
 * Whether one database holds a table of ours. The runtime writes these files while they are read
 * (an object opening or closing its database): an open that fails is tried again a few times.
 */
function ourTablesIn(file: string, attempts = 20): boolean {
  try {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
      return tables.some((table) => table.name !== "__miniflare_do_name");
    } finally {
      db.close();
    }
  } catch (error) {
    if (attempts <= 1) throw error;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    return ourTablesIn(file, attempts - 1);
  }
}
