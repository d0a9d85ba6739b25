import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type BatchRecord, newBatchRecord } from '../../../src/batch/batch-records.ts';
import { LmdbBatchStore } from '../../../src/batch/lmdb-batch-store.ts';

/** LmdbBatchStore: a line is handed to one claimer and answered once; listing pages newest first; a reopened store resumes. */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-batch-store-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const batch = (id: string, accountId = 'acct'): BatchRecord =>
  newBatchRecord({
    id,
    accountId,
    keyId: 'k',
    endpoint: '/v1/embeddings',
    inputFileId: 'f',
    metadata: null,
    status: 'in_progress',
    createdAt: 1,
    expiresAt: 2,
    keepUntil: 3,
  });
const lines = (n: number) => Array.from({ length: n }, (_, i) => ({ index: i, customId: `c${i}`, body: '{}' }));

describe('LmdbBatchStore', () => {
  it('hands each line out once, records the first answer only, and counts it', async () => {
    const store = new LmdbBatchStore(path.join(dir, 'a'));
    await store.createBatch(batch('b1'));
    await store.addLines('b1', lines(5));
    await store.addLines('b1', lines(5)); // a validation redone: no change
    const first = await store.claimLines('b1', 'me', 3);
    const second = await store.claimLines('b1', 'me', 3);
    expect([...first, ...second].map((l) => l.index)).toEqual([0, 1, 2, 3, 4]);
    expect(await store.claimLines('b1', 'me', 3)).toEqual([]);
    expect(await store.finishLine('b1', { index: 0, ok: true, line: 'x' })).toBe(true);
    expect(await store.finishLine('b1', { index: 0, ok: false, line: 'y' })).toBe(false);
    await store.releaseLine('b1', 1, 'me');
    expect((await store.claimLines('b1', 'me', 3)).map((l) => l.index)).toEqual([1]);
    expect(await store.finishLine('b1', { index: 1, ok: false, line: 'z' })).toBe(true);
    expect(await store.getBatch('b1')).toMatchObject({ completed: 1, failed: 1 });
    expect(await store.openLineCount('b1')).toBe(3);
    const results = [];
    for await (const r of store.results('b1')) results.push(r);
    expect(results).toEqual([
      { index: 0, ok: true, line: 'x' },
      { index: 1, ok: false, line: 'z' },
    ]);
    await store.close();

    const reopened = new LmdbBatchStore(path.join(dir, 'a')); // a restart: claims were in memory, answers are not
    expect((await reopened.claimLines('b1', 'me', 10)).map((l) => l.index)).toEqual([2, 3, 4]);
    await reopened.close();
  });

  it("lists an account's batches newest first, in pages, and no other account's", async () => {
    const store = new LmdbBatchStore(path.join(dir, 'b'));
    for (const id of ['b1', 'b2', 'b3']) await store.createBatch(batch(id));
    await store.createBatch(batch('other', 'acct-2'));
    const page1 = await store.listBatches('acct', null, 2);
    expect(page1.data.map((b) => b.id)).toEqual(['b3', 'b2']);
    expect(page1.hasMore).toBe(true);
    const page2 = await store.listBatches('acct', 'b2', 2);
    expect(page2).toMatchObject({ data: [expect.objectContaining({ id: 'b1' })], hasMore: false });
    expect((await store.listBatches('acct', 'other', 2)).data).toEqual([]);
    await store.close();
  });
});
