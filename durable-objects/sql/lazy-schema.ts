import { migrate, type Migration } from "./migrations.ts";
import type { SqlHost } from "./sql-host.ts";

/**
 * An object's schema, created only by traffic that proves the object should exist (a tenant
 * created by the admin, a session created by its tenant), never by a read or a failed
 * authentication: every object that writes anything is storage billed for ever, and anyone can
 * name an object (a garbage key names a tenant, a path names a session).
 *
 * Existence is the presence of the `schema_migrations` table, read from `sqlite_master`. Measured
 * with `wrangler dev` (test/e2e/no-storage.e2e.test.ts): a read-only query, like an object whose
 * constructor runs no SQL at all, adds no table and writes no data of ours. The local runtime
 * keeps a small SQLite file for every object it instantiates whatever the object does (holding
 * only its own `__miniflare_do_name` record), so the test counts databases that hold our tables.
 * A present schema is brought up to date in the constructor (cheap when current); an absent one
 * is created by `create()` in the same synchronous turn as the object's first write.
 */
export class LazySchema {
  private present: boolean;

  constructor(
    private readonly host: SqlHost,
    private readonly migrations: readonly Migration[],
  ) {
    this.present = host.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").one().n > 0;
    if (this.present) migrate(host, migrations);
  }

  /** Whether the object holds a schema (and so possibly data); reading it writes nothing. */
  get exists(): boolean {
    return this.present;
  }

  /** Creates the schema (idempotent); only for traffic that proves the object should exist. */
  create(): void {
    if (this.present) return;
    migrate(this.host, this.migrations);
    this.present = true;
  }

  /** After `deleteAll()`: the object holds nothing again, and stays that way until `create()`. */
  forget(): void {
    this.present = false;
  }
}
