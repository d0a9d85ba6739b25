import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

/** The folder of numbered migrations: `NNNN_name.sql`, applied in number order, each once. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** pg_advisory_lock key held while migrating (any constant no other lock uses; 'hearthmg' in ASCII). */
const MIGRATION_LOCK = 0x6865617274686d67n;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The migrations in `dir`, by version; a file not named `NNNN_name.sql` is an error (a typo must not be skipped). */
export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const out: Migration[] = [];
  for (const file of fs.readdirSync(dir)) {
    const m = /^(\d+)_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) throw new Error(`migration file '${file}' is not named NNNN_name.sql`);
    out.push({ version: Number(m[1]), name: m[2]!, sql: fs.readFileSync(path.join(dir, file), 'utf8') });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++)
    if (out[i]!.version === out[i - 1]!.version) throw new Error(`two migrations numbered ${out[i]!.version}`);
  return out;
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, in order, each in its own transaction,
 * under a session advisory lock: replicas starting together (and `hearth db migrate`) apply each exactly once.
 * Returns the versions it applied.
 */
export async function migrate(client: pg.ClientBase, migrations = readMigrations()): Promise<number[]> {
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
  try {
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw new Error(`migration ${m.version}_${m.name} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      applied.push(m.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch(() => {});
  }
}
