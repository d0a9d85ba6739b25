import OpenAI, { toFile } from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess } from '../helpers/hearth-process.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { tinyChatModel } from '../helpers/test-model.ts';

/**
 * The Batch API in a fleet (issue #41): two `hearth serve` replicas on one PostgreSQL database. A file uploaded to one
 * is read by the other; a batch made on one is worked on by both (each claims lines through the database), and its
 * output holds every custom_id exactly once.
 */
const MODEL_ID = 'local/tiny-chat';
const LINES = 40;
const SECRET_KEY = 'ab'.repeat(32);

describe('Batch API across two PostgreSQL replicas', () => {
  const pg = usePostgres();
  const replicas: HearthProcess[] = [];

  afterAll(async () => {
    for (const r of replicas) await r.stop();
  });

  it('shares one batch between the replicas, no line answered twice', async () => {
    const url = await pg.server.createDatabase();
    const model = await tinyChatModel();
    for (let i = 0; i < 2; i++) {
      replicas.push(await startHearthProcess({ args: ['--model', model, '--model-id', MODEL_ID, '--slots', '2', '--batch-concurrency', '2'], env: { HEARTH_DATABASE_URL: url, HEARTH_SECRET_KEY: SECRET_KEY } }));
    }
    for (const r of replicas) await r.waitReady(120_000);
    const [a, b] = replicas.map((r) => new OpenAI({ apiKey: replicas[0]!.key, baseURL: `${r.baseUrl}/api/inference/v1`, maxRetries: 0 })) as [OpenAI, OpenAI];
    const lines = Array.from({ length: LINES }, (_, i) => ({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: MODEL_ID, messages: [{ role: 'user', content: `Tell story number ${i}.` }], max_tokens: 24 } }));
    const file = await a.files.create({ file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')), 'in.jsonl'), purpose: 'batch' });
    expect(await (await b.files.content(file.id)).text()).toBe(lines.map((l) => JSON.stringify(l)).join('\n'));
    const batch = await a.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    let done = batch;
    for (const deadline = Date.now() + 240_000; done.status !== 'completed' && done.status !== 'failed' && Date.now() < deadline; done = await b.batches.retrieve(batch.id)) await new Promise((r) => setTimeout(r, 200));
    expect(done.status).toBe('completed');
    expect(done.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const text = await (await a.files.content(done.output_file_id!)).text();
    const ids = text.split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
    expect(ids).toHaveLength(LINES);
    expect(new Set(ids)).toEqual(new Set(lines.map((l) => l.custom_id)));
    // Both replicas claimed lines of the batch.
    for (const r of replicas) expect(r.logs()).toContain('batch lines claimed');
  }, 300_000);
});
