import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresBatchStore } from '../../../src/batch/postgres-batch-store.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { migrate } from '../../../src/store/postgres/migrations.ts';
import { usePostgres } from '../../helpers/postgres.ts';

/**
 * PostgresBatchStore when the database ends a connection inside one of its transactions (the 5 s
 * idle-in-transaction limit that frees a frozen replica's locks, an administrator, a restart): the transaction
 * fails, the process goes on (no unhandled 'error' event of the checked-out client), and the next call works on a
 * fresh connection. The transaction is held open by an upload read from a FIFO that the test writes only later.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-pg-batch-store-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const server = usePostgres();

describe('PostgresBatchStore', () => {
  it('survives a connection ended inside a transaction', async () => {
    const url = await server.server.createDatabase();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await migrate(admin);
      const store = await PostgresBatchStore.open(url, dir, createLogger('error'));
      try {
        const fifo = path.join(dir, 'upload.fifo');
        execFileSync('mkfifo', [fifo]);
        const meta = {
          id: 'file-1',
          accountId: 'acct',
          filename: 'in.jsonl',
          purpose: 'batch' as const,
          bytes: 2,
          createdAt: 1,
          expiresAt: 2,
        };
        const put = store.putFile(meta, fifo).then(
          () => 'stored',
          (e: unknown) => e,
        );
        const inTx = async () =>
          (
            await admin.query<{ pid: number }>(
              "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'",
            )
          ).rows;
        let held: Array<{ pid: number }> = [];
        for (const deadline = Date.now() + 10_000; held.length === 0 && Date.now() < deadline; held = await inTx())
          await new Promise((r) => setTimeout(r, 20));
        expect(held).toHaveLength(1);
        await admin.query('SELECT pg_terminate_backend($1)', [held[0]!.pid]);
        await new Promise((r) => setTimeout(r, 200)); // the client gets the FATAL message while it waits for the upload
        await fs.promises.writeFile(fifo, '{}');
        expect(await put).toBeInstanceOf(Error);
        expect(await store.getFile('file-1')).toBeUndefined();
        const again = path.join(dir, 'again.jsonl');
        fs.writeFileSync(again, '{}');
        await store.putFile(meta, again);
        expect(await store.getFile('file-1')).toMatchObject({ id: 'file-1', bytes: 2 });
      } finally {
        await store.close();
      }
    } finally {
      await admin.end();
    }
  });
});
