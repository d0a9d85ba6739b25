import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { settingsHelp } from '../config/config.ts';
import type { SettingSpec } from '../config/config-spec.ts';
import { HearthStore } from '../store/database.ts';
import { ImportRefused, importLmdb } from '../store/postgres/lmdb-import.ts';
import { migrate } from '../store/postgres/migrations.ts';
import { ConfigError, JSON_SETTING, RECORDS_SETTINGS, commandArgs } from './cli-args.ts';

const SPECS: SettingSpec[] = [...RECORDS_SETTINGS, JSON_SETTING];

export const DB_HELP = `Usage: hearth db <migrate|import> --database-url URL [options]

  hearth db migrate --database-url URL                 Apply the schema migrations not yet applied (a server
                                                       also does this at start; safe while replicas run)
  hearth db import --data-dir DIR --database-url URL   Copy every record of an LMDB data dir into an empty
                                                       PostgreSQL database, in one transaction (refused when
                                                       the database already holds records)

The master key is not a record: give the replicas the key of the data dir (HEARTH_SECRET_KEY, or the content of
<data-dir>/master.key) so that encrypted provider keys still open.

Options:
${settingsHelp(SPECS)}`;

/** `hearth db`: the PostgreSQL records' schema and the move of a single-machine data dir into them. */
export async function dbCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const args = commandArgs(argv, SPECS, DB_HELP, out);
  if (typeof args === 'number') return args;
  const { action, options, print } = args;
  const url = options.databaseUrl === undefined ? undefined : String(options.databaseUrl);
  if (!url) throw new ConfigError(`db ${action} needs --database-url URL (or HEARTH_DATABASE_URL)`);
  switch (action) {
    case 'migrate': {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
      await client.connect();
      try {
        const applied = await migrate(client);
        print({ applied }, (v) =>
          v.applied.length === 0 ? 'the schema is up to date' : `applied migrations ${v.applied.join(', ')}`,
        );
      } finally {
        await client.end();
      }
      return 0;
    }
    case 'import': {
      const dataDir = String(options.dataDir);
      if (!fs.existsSync(path.join(dataDir, 'records')))
        throw new ConfigError(
          `no records in ${dataDir} (expected ${path.join(dataDir, 'records')}): give --data-dir of the server to move`,
        );
      const source = HearthStore.open(dataDir);
      try {
        const counts = await importLmdb(source, url);
        print(
          counts,
          (c) =>
            `imported ${Object.values(c).reduce((a, b) => a + b, 0)} records: ${Object.entries(c)
              .map(([t, n]) => `${t} ${n}`)
              .join(', ')}`,
        );
        return 0;
      } catch (err) {
        if (err instanceof ImportRefused) {
          process.stderr.write(`hearth db import: ${err.message}\n`);
          return 1;
        }
        throw err;
      } finally {
        await source.close();
      }
    }
    default:
      throw new ConfigError(`unknown db action '${action}' (migrate, import)`);
  }
}
