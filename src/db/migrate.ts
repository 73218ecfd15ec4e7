// Owns applying migrations: one ordered list, run at start and by the CLI, on either store.
import { type Migration, type MigrationProvider, Migrator } from 'kysely';
import { initial } from './migrations/001-initial.js';
import { columnTypes, type MigrationDef } from './migrations/helpers.js';
import type { Store } from './store.js';

const MIGRATIONS: MigrationDef[] = [initial];

export async function migrate(store: Store): Promise<string[]> {
  const t = columnTypes(store.dialect);
  const provider: MigrationProvider = {
    async getMigrations() {
      const out: Record<string, Migration> = {};
      for (const m of MIGRATIONS) out[m.name] = { up: (db) => m.up(db, t) };
      return out;
    },
  };
  const migrator = new Migrator({
    db: store.db,
    provider,
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
