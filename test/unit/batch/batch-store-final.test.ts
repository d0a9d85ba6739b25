import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type BatchRecord, newBatchRecord } from '../../../src/batch/batch-records.ts';
import type { BatchStore } from '../../../src/batch/batch-store.ts';
import { LmdbBatchStore } from '../../../src/batch/lmdb-batch-store.ts';
import { PostgresBatchStore } from '../../../src/batch/postgres-batch-store.ts';
import { createLogger } from '../../../src/log/logger.ts';
import pgClient from 'pg';
import { migrate } from '../../../src/store/postgres/migrations.ts';
import { usePostgres } from '../../helpers/postgres.ts';

/**
 * Both batch stores (BatchStore contract): an answer is recorded while its batch is in_progress or cancelling, and
 * dropped once another process ended the batch (cancelled for its revoked key, expired): a final batch's counts never
 * change, whatever a replica that was paused answers late. The answered and the unanswered lines of a batch read back
 * whole and in order, however many pages the store reads them in (PostgreSQL: 1,000 rows a query).
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-batch-final-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const pg = usePostgres();

const batch = (id: string, total = 3): BatchRecord =>
  newBatchRecord({
    id,
    accountId: 'acct',
    keyId: 'k',
    endpoint: '/v1/embeddings',
    inputFileId: 'f',
    metadata: null,
    status: 'in_progress',
    total,
    createdAt: 1,
    expiresAt: 2,
    keepUntil: 3,
  });

const stores: Array<[string, () => Promise<BatchStore>]> = [
  ['LMDB', async () => new LmdbBatchStore(path.join(dir, 'lmdb'))],
  [
    'PostgreSQL',
    async () => {
      const url = await pg.server.createDatabase();
      const client = new pgClient.Client({ connectionString: url });
      await client.connect();
      await migrate(client).finally(() => client.end()); // the records' schema, as the server makes it at start
      return PostgresBatchStore.open(url, path.join(dir, 'pg'), createLogger('error'));
    },
  ],
];

describe.each(stores)('%s batch store', (_name, open) => {
  it('records answers while in_progress or cancelling, none once the batch is final', async () => {
    const store = await open();
    try {
      await store.createBatch(batch('b1'));
      await store.addLines(
        'b1',
        Array.from({ length: 3 }, (_, i) => ({ index: i, customId: `c${i}`, body: '{}' })),
      );
      expect((await store.claimLines('b1', 'me', 3)).map((l) => l.index)).toEqual([0, 1, 2]);
      expect(await store.finishLine('b1', { index: 0, ok: true, line: 'a' })).toBe(true);
      await store.updateBatch('b1', (b) => ({ ...b, status: 'cancelling' }));
      expect(await store.finishLine('b1', { index: 1, ok: true, line: 'b' })).toBe(true);
      await store.updateBatch('b1', (b) => ({ ...b, status: 'cancelled' }));
      expect(await store.finishLine('b1', { index: 2, ok: true, line: 'c' })).toBe(false);
      expect(await store.getBatch('b1')).toMatchObject({ status: 'cancelled', completed: 2, failed: 0 });
      expect(await store.openLineCount('b1')).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('reads back every answered and every unanswered line of a batch over several pages, in line order', async () => {
    const store = await open();
    try {
      const total = 2_500;
      await store.createBatch(batch('big', total));
      await store.addLines(
        'big',
        Array.from({ length: total }, (_, i) => ({ index: i, customId: `c${i}`, body: `{"n":${i}}` })),
      );
      expect((await store.claimLines('big', 'me', total)).length).toBe(total);
      // Answered: every third line and a run across the first page boundary; the rest stay open.
      const answered = new Set([
        ...Array.from({ length: total }, (_, i) => i).filter((i) => i % 3 === 0),
        998,
        999,
        1000,
        1001,
      ]);
      for (const index of answered)
        expect(await store.finishLine('big', { index, ok: index % 2 === 0, line: `r${index}` })).toBe(true);
      const results = [];
      for await (const r of store.results('big')) results.push(r);
      const order = [...answered].sort((a, b) => a - b);
      expect(results).toEqual(order.map((index) => ({ index, ok: index % 2 === 0, line: `r${index}` })));
      const open_ = [];
      for await (const l of store.unanswered('big')) open_.push(l);
      const rest = Array.from({ length: total }, (_, i) => i).filter((i) => !answered.has(i));
      expect(open_).toEqual(rest.map((index) => ({ index, customId: `c${index}`, body: `{"n":${index}}` })));
    } finally {
      await store.close();
    }
  });
});
