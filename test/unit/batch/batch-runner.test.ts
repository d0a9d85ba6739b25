import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BatchError, BatchRecord } from '../../../src/batch/batch-records.ts';
import { newBatchRecord, nowSeconds } from '../../../src/batch/batch-records.ts';
import type { BatchOwnerCheck } from '../../../src/batch/batch-owner.ts';
import { BatchRunner } from '../../../src/batch/batch-runner.ts';
import type { BatchStore } from '../../../src/batch/batch-store.ts';
import { LmdbBatchStore } from '../../../src/batch/lmdb-batch-store.ts';
import type { DirectAnswer, DirectEndpoint, DirectUrl } from '../../../src/inference/direct-answer.ts';
import { createLogger } from '../../../src/log/logger.ts';

/**
 * BatchRunner on the LMDB store with answers made up here: the owner check is asked before each claim (a key revoked
 * mid-batch stops it at the next line: cancelled, errors naming the reason, the answered lines kept, the rest in the
 * error file with that code), and a line whose answer could not be recorded is given back and answered later.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-batch-runner-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const LINES = 12;
const REVOKED: BatchError = { code: 'api_key_revoked', message: 'revoked', param: null, line: null };

/** A store with a batch of LINES embedding lines, validating. */
async function storeWithBatch(name: string): Promise<{ store: LmdbBatchStore; id: string }> {
  const store = new LmdbBatchStore(path.join(dir, name));
  const input = path.join(store.scratchDir, 'input');
  fs.writeFileSync(
    input,
    Array.from({ length: LINES }, (_, i) =>
      JSON.stringify({
        custom_id: `c${i}`,
        method: 'POST',
        url: '/v1/embeddings',
        body: { model: 'm', input: `t${i}` },
      }),
    ).join('\n'),
  );
  await store.putFile(
    {
      id: 'file-in',
      accountId: 'acct',
      filename: 'in.jsonl',
      purpose: 'batch',
      bytes: fs.statSync(input).size,
      createdAt: nowSeconds(),
      expiresAt: nowSeconds() + 3600,
    },
    input,
  );
  const b = newBatchRecord({
    id: 'batch_1',
    accountId: 'acct',
    keyId: 'key-1',
    endpoint: '/v1/embeddings',
    inputFileId: 'file-in',
    metadata: null,
    createdAt: nowSeconds(),
    expiresAt: nowSeconds() + 86_400,
    keepUntil: nowSeconds() + 86_400,
  });
  await store.createBatch(b);
  return { store, id: b.id };
}

/** Endpoints whose every line answers 200 at once, counting the calls. */
function endpoints(calls: { n: number }): Record<DirectUrl, DirectEndpoint> {
  const answer: DirectEndpoint = () => {
    calls.n++;
    return {
      done: Promise.resolve<DirectAnswer>({ status: 200, body: { ok: true }, retryable: false }),
      cancel: () => {},
    };
  };
  return {
    '/v1/chat/completions': answer,
    '/v1/completions': answer,
    '/v1/embeddings': answer,
    '/v1/responses': answer,
  };
}

async function settled(store: BatchStore, id: string): Promise<BatchRecord> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
    const b = (await store.getBatch(id))!;
    if (['completed', 'cancelled', 'failed', 'expired'].includes(b.status)) return b;
  }
  throw new Error('batch did not settle');
}

async function fileLines(
  store: BatchStore,
  id: string | null,
): Promise<Array<{ custom_id: string; error: { code: string } | null }>> {
  if (id === null) return [];
  const chunks: Buffer[] = [];
  for await (const c of store.readFile(id)) chunks.push(c);
  return Buffer.concat(chunks)
    .toString()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { custom_id: string; error: { code: string } | null });
}

const log = createLogger('error');

/**
 * Runs `check` while a BatchRunner works on `store` (`concurrency` lines at a time, `owner` its owner check, over
 * endpoints that count their calls in `calls`), then stops the runner and closes the store, whatever `check` threw.
 */
async function whileRunning(
  store: BatchStore,
  concurrency: number,
  owner: BatchOwnerCheck,
  check: (calls: { n: number }) => Promise<void>,
): Promise<void> {
  const calls = { n: 0 };
  const runner = new BatchRunner(
    store,
    endpoints(calls),
    log,
    { concurrency, tickMs: 20, lineLimit: 1 << 20, ttlDays: 1 },
    owner,
  );
  try {
    await check(calls);
  } finally {
    await runner.stop();
    await store.close();
  }
}

describe('BatchRunner', () => {
  it('asks the owner check before each claim: a key revoked mid-batch stops it at the next line', async () => {
    const { store, id } = await storeWithBatch('revoked');
    // Revoked once three answers are recorded: between two claims (concurrency 1).
    let recorded = 0;
    const finishLine = store.finishLine.bind(store);
    store.finishLine = async (batchId, result) => {
      const ok = await finishLine(batchId, result);
      if (ok) recorded++;
      return ok;
    };
    const owner: BatchOwnerCheck = () => (recorded < 3 ? null : REVOKED);
    await whileRunning(store, 1, owner, async (calls) => {
      const b = await settled(store, id);
      expect(b).toMatchObject({ status: 'cancelled', total: LINES, completed: 3, failed: 0, errors: [REVOKED] });
      expect(calls.n).toBe(3);
      const out = await fileLines(store, b.outputFileId);
      const rest = await fileLines(store, b.errorFileId);
      expect(out.map((l) => l.custom_id)).toEqual(['c0', 'c1', 'c2']);
      expect(rest).toHaveLength(LINES - 3);
      expect(rest.every((l) => l.error?.code === 'api_key_revoked')).toBe(true);
    });
  });

  it('a batch whose key is revoked before it validates runs no line (cancelled with nothing counted, as a cancel there)', async () => {
    const { store, id } = await storeWithBatch('revoked-early');
    await whileRunning(
      store,
      2,
      () => REVOKED,
      async (calls) => {
        const b = await settled(store, id);
        expect(b).toMatchObject({
          status: 'cancelled',
          total: 0,
          completed: 0,
          outputFileId: null,
          errorFileId: null,
          errors: [REVOKED],
        });
        expect(calls.n).toBe(0);
      },
    );
  });

  it('gives back a line whose answer could not be recorded, and answers it again', async () => {
    const { store, id } = await storeWithBatch('flaky');
    let failures = 0;
    const finishLine = store.finishLine.bind(store);
    store.finishLine = async (batchId, result) => {
      if (result.index === 4 && failures++ === 0) throw new Error('connection lost');
      return finishLine(batchId, result);
    };
    await whileRunning(
      store,
      2,
      () => null,
      async (calls) => {
        const b = await settled(store, id);
        expect(b).toMatchObject({ status: 'completed', completed: LINES });
        expect(calls.n).toBe(LINES + 1);
        expect((await fileLines(store, b.outputFileId)).map((l) => l.custom_id).sort()).toEqual(
          Array.from({ length: LINES }, (_, i) => `c${i}`).sort(),
        );
      },
    );
  });

  it('shares the slots between batches: a later, small batch of another account ends long before a large one', async () => {
    const { store, id: large } = await storeWithBatch('fair');
    // batch_1 (12 lines) first in the store's order, then batch_2 (1 line) of another account, both validating.
    const input = path.join(store.scratchDir, 'input-2');
    const line = { custom_id: 'only', method: 'POST', url: '/v1/embeddings', body: { model: 'm', input: 'x' } };
    fs.writeFileSync(input, JSON.stringify(line));
    const at = nowSeconds();
    await store.putFile(
      {
        id: 'file-2',
        accountId: 'acct-2',
        filename: 'b.jsonl',
        purpose: 'batch',
        bytes: 1,
        createdAt: at,
        expiresAt: at + 3600,
      },
      input,
    );
    const small = newBatchRecord({
      id: 'batch_2',
      accountId: 'acct-2',
      keyId: 'key-2',
      endpoint: '/v1/embeddings',
      inputFileId: 'file-2',
      metadata: null,
      createdAt: at,
      expiresAt: at + 86_400,
      keepUntil: at + 86_400,
    });
    await store.createBatch(small);
    // Each line takes 30 ms: one slot, so the large batch alone would hold it for 12 x 30 ms.
    const slow: DirectEndpoint = () => ({
      done: new Promise<DirectAnswer>((r) => setTimeout(() => r({ status: 200, body: {}, retryable: false }), 30)),
      cancel: () => {},
    });
    const runner = new BatchRunner(
      store,
      { '/v1/chat/completions': slow, '/v1/completions': slow, '/v1/embeddings': slow, '/v1/responses': slow },
      log,
      { concurrency: 1, tickMs: 20, lineLimit: 1 << 20, ttlDays: 1 },
      () => null,
    );
    try {
      expect((await settled(store, small.id)).status).toBe('completed');
      const meanwhile = (await store.getBatch(large))!;
      expect(meanwhile.status).toBe('in_progress'); // before the fix: completed first, all 12 lines before the one
      expect((await settled(store, large)).status).toBe('completed');
    } finally {
      await runner.stop();
      await store.close();
    }
  });
});
