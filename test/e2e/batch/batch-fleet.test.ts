import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { type HearthProcess, hearthCli, startHearthProcess } from '../../helpers/hearth-process.ts';
import { batchEnded, batchFileLines, batchStarted } from '../../helpers/batch-polling.ts';
import { batchInputText, chatBatchLines, createChatBatch, expectEveryLineAnswered } from '../../helpers/chat-batch.ts';
import { usePostgres } from '../../helpers/postgres.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * The Batch API in a fleet (issue #41): two `hearth serve` replicas on one PostgreSQL database. A file uploaded to one
 * is read by the other; a batch made on one is worked on by both, each claiming lines through the database: while one
 * replica is paused (SIGSTOP) the other answers lines, then the other way round, so both must have worked on it
 * whatever the timing. Its output holds every custom_id exactly once. A key revoked by a third process (the CLI on
 * the database) while one replica is paused stops its batch on the other one, which never saw the revocation made.
 */
const MODEL_ID = 'local/tiny-chat';
const LINES = 200;
const SECRET_KEY = 'ab'.repeat(32);

describe('Batch API across two PostgreSQL replicas', () => {
  const pg = usePostgres();
  const replicas: HearthProcess[] = [];
  let url = '';

  afterAll(async () => {
    for (const r of replicas) await r.stop();
  });

  it('shares one batch between the replicas, no line answered twice', async () => {
    url = await pg.server.createDatabase();
    const model = await tinyChatModel();
    for (let i = 0; i < 2; i++) {
      replicas.push(
        await startHearthProcess({
          args: ['--model', model, '--model-id', MODEL_ID, '--slots', '2', '--batch-concurrency', '1'],
          env: { HEARTH_DATABASE_URL: url, HEARTH_SECRET_KEY: SECRET_KEY },
        }),
      );
    }
    for (const r of replicas) await r.waitReady(120_000);
    const [a, b] = replicas.map(
      (r) => new OpenAI({ apiKey: replicas[0]!.key, baseURL: `${r.baseUrl}/api/inference/v1`, maxRetries: 0 }),
    ) as [OpenAI, OpenAI];
    const lines = chatBatchLines(MODEL_ID, LINES, 'line-', (i) => `Tell story number ${i}.`, 32);
    const batch = await createChatBatch(a, lines);
    expect(await (await b.files.content(batch.input_file_id)).text()).toBe(batchInputText(lines));
    const counts = async (c: OpenAI) => {
      const now = await c.batches.retrieve(batch.id);
      return { status: now.status, answered: (now.request_counts?.completed ?? 0) + (now.request_counts?.failed ?? 0) };
    };
    const until = async (c: OpenAI, ok: (x: { status: string; answered: number }) => boolean) => {
      for (const deadline = Date.now() + 120_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50)))
        if (ok(await counts(c))) return counts(c);
      throw new Error('no progress');
    };
    await until(a, (x) => x.answered >= 3);
    // Only one replica runs at a time: each must answer lines while the other is paused.
    for (const [paused, running, client] of [
      [replicas[0]!, replicas[1]!, b],
      [replicas[1]!, replicas[0]!, a],
    ] as const) {
      paused.proc.kill('SIGSTOP');
      try {
        const before = (await counts(client)).answered;
        const after = await until(client, (x) => x.answered >= before + 5);
        expect(after.answered, `${running.baseUrl} answered lines while the other was paused`).toBeGreaterThanOrEqual(
          before + 5,
        );
      } finally {
        paused.proc.kill('SIGCONT');
      }
    }
    await expectEveryLineAnswered(b, batch, lines, a);
  }, 300_000);

  it('stops the batch of a key revoked elsewhere on a replica that did not revoke it', async () => {
    expect(replicas).toHaveLength(2);
    const [first, second] = replicas as [HearthProcess, HearthProcess];
    const made = hearthCli(['keys', 'create', '--name', 'nightly', '--json'], {
      HEARTH_DATABASE_URL: url,
      HEARTH_SECRET_KEY: SECRET_KEY,
    });
    expect(made.status, made.stderr).toBe(0);
    const key = JSON.parse(made.stdout) as { id: string; key: string };
    const job = new OpenAI({ apiKey: key.key, baseURL: `${first.baseUrl}/api/inference/v1`, maxRetries: 0 });
    const reader = new OpenAI({ apiKey: first.key, baseURL: `${second.baseUrl}/api/inference/v1`, maxRetries: 0 });
    const lines = chatBatchLines(MODEL_ID, LINES, 'r-', (i) => `Story ${i}`, 32);
    const batch = await createChatBatch(job, lines);
    await batchStarted(reader, batch);
    first.proc.kill('SIGSTOP');
    let done = batch;
    try {
      const revoked = hearthCli(['keys', 'revoke', key.id], {
        HEARTH_DATABASE_URL: url,
        HEARTH_SECRET_KEY: SECRET_KEY,
      });
      expect(revoked.status, revoked.stderr).toBe(0);
      // Only the second replica runs: it must see the revocation in the records and end the batch itself.
      done = await batchEnded(reader, batch, 60_000, 100);
    } finally {
      first.proc.kill('SIGCONT');
    }
    expect(done.status).toBe('cancelled');
    expect(done.errors?.data).toEqual([expect.objectContaining({ code: 'api_key_revoked' })]);
    type Line = { custom_id: string; error: { code: string } | null };
    const read = (id: string | null | undefined) => batchFileLines<Line>(reader, id);
    const answered = await read(done.output_file_id);
    const rest = await read(done.error_file_id);
    expect(answered.length).toBeLessThan(LINES);
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.every((l) => l.error?.code === 'api_key_revoked')).toBe(true);
    expect([...answered, ...rest].map((l) => l.custom_id).sort()).toEqual(lines.map((l) => l.custom_id).sort());
    // The first replica, resumed, sees the revocation too: nothing of the batch is answered any more.
    await new Promise((r) => setTimeout(r, 2_000));
    const after = await reader.batches.retrieve(batch.id);
    expect(after.status).toBe('cancelled');
    expect(after.request_counts).toEqual(done.request_counts);
  }, 120_000);
});
