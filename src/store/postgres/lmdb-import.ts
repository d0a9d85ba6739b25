import pg from 'pg';
import type { HearthStore } from '../database.ts';
import { encodeKey } from './key-order.ts';
import { migrate } from './migrations.ts';
import { CHANGES_CHANNEL, TABLE_NAMES, WRITE_LOCK, type TableName } from './postgres-store.ts';
import { UPSERT_SQL } from './records-sql.ts';

/** Records copied per table. */
export type ImportCounts = Record<TableName, number>;

/** The target database already holds records: an import would mix two installations, so it is refused. */
export class ImportRefused extends Error {}

const BATCH = 500;

/**
 * Copies every record of an LMDB data dir (every table of RecordTables: users, sessions, API keys, workspaces
 * and Yams, projects, apps, deployments, stored responses, setup tokens, accounts and the index) into the
 * PostgreSQL records at `url`, in ONE transaction under the fleet write lock: all of it or nothing. Values go
 * over as the JSON every replica reads (ids, hashes and encrypted values are strings and stay byte for byte);
 * a value JSON cannot carry unchanged (binary, a date object, a non-finite number) stops the import naming
 * its record. Refuses (ImportRefused) a database that already holds records, so running it twice is safe.
 * Afterwards the rows are counted back per table; a mismatch fails the import.
 */
export async function importLmdb(source: HearthStore, url: string): Promise<ImportCounts> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await migrate(client);
    await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK})`);
    try {
      const present = Number(
        (await client.query<{ n: string }>('SELECT count(*)::text AS n FROM records WHERE value IS NOT NULL')).rows[0]!
          .n,
      );
      if (present > 0)
        throw new ImportRefused(
          `the database already holds ${present} records: import only into an empty database (a new one, or drop and re-create it)`,
        );
      const counts = Object.fromEntries(TABLE_NAMES.map((t) => [t, 0])) as ImportCounts;
      let top = 0;
      for (const tbl of TABLE_NAMES) {
        let batch: { key: string; json: string }[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const res = await client.query<{ seq: string }>(UPSERT_SQL, [
            batch.map(() => tbl),
            batch.map((b) => b.key),
            batch.map((b) => b.json),
          ]);
          for (const r of res.rows) top = Math.max(top, Number(r.seq));
          counts[tbl] += batch.length;
          batch = [];
        };
        for (const { key, value } of (
          source.dbs[tbl] as { getRange(): Iterable<{ key: unknown; value: unknown }> }
        ).getRange()) {
          if (typeof key !== 'string' && !Array.isArray(key))
            throw new Error(`${tbl}: a key of type ${typeof key} cannot be imported`);
          assertJson(value, `${tbl} ${JSON.stringify(key)}`);
          batch.push({ key: encodeKey(key as string), json: JSON.stringify(value) });
          if (batch.length >= BATCH) await flush();
        }
        await flush();
      }
      const back = await client.query<{ tbl: TableName; n: string }>(
        'SELECT tbl, count(*)::text AS n FROM records WHERE value IS NOT NULL GROUP BY tbl',
      );
      for (const t of TABLE_NAMES) {
        const n = Number(back.rows.find((r) => r.tbl === t)?.n ?? 0);
        if (n !== counts[t]) throw new Error(`${t}: copied ${counts[t]} records but the database holds ${n}`);
      }
      await client.query(top > 0 ? `SELECT pg_notify('${CHANGES_CHANNEL}', '${top}'); COMMIT` : 'COMMIT');
      return counts;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/** Throws unless `value` is plain JSON (what JSON.stringify then JSON.parse gives back equal). */
function assertJson(value: unknown, where: string): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`${where}: ${value} cannot be imported as JSON`);
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) assertJson(v, where);
    return;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value as object)) if (v !== undefined) assertJson(v, where);
    return;
  }
  throw new Error(
    `${where}: a value of type ${value === undefined ? 'undefined' : ((value as object).constructor?.name ?? typeof value)} cannot be imported as JSON`,
  );
}
