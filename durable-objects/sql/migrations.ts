import type { SqlHost } from "./sql-host.ts";

export interface Migration {
  version: number;
  name: string;
  statements: readonly string[];
}

export class MigrationHistoryMismatch extends Error {
  override readonly name = "MigrationHistoryMismatch";
}

/**
 * Applies the pending migrations of an append-only list, each inside one transaction with its
 * version row (D5). Cheap when current: one small read per object start. A list whose applied
 * prefix differs from what storage recorded is refused: migrations are append-only.
 */
export function migrate(host: SqlHost, migrations: readonly Migration[]): number {
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new MigrationHistoryMismatch("Migration versions must be 1, 2, 3, …");
  });
  host.sql.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const applied = host.sql
    .exec<{ version: number; name: string }>("SELECT version, name FROM schema_migrations ORDER BY version")
    .toArray();
  for (const row of applied) {
    const known = migrations[row.version - 1];
    if (!known || known.name !== row.name) {
      throw new MigrationHistoryMismatch(`Storage has migration ${row.version} "${row.name}" that this code does not know`);
    }
  }
  for (const migration of migrations.slice(applied.length)) {
    host.transactionSync(() => {
      for (const statement of migration.statements) host.sql.exec(statement);
      host.sql.exec(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        migration.version,
        migration.name,
        Date.now(),
      );
    });
  }
  return migrations.length;
}
